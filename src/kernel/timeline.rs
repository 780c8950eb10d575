//! cfs_rq->tasks_timeline: the queued entities other than curr, ordered by
//! virtual deadline, with the smallest vruntime at hand (the kernel's
//! rbtree is sorted by deadline and augmented with each subtree's
//! min_vruntime). Equal deadlines keep the order they were queued in, as
//! rb_add puts an equal key to the right of those already there.
//!
//! Two sorted vectors instead of an augmented rbtree: lookups are binary
//! searches and the scans __pick_eevdf does stop at the first eligible
//! entity, which is almost always near the front. A queue holds a few
//! entities most of the time, where moving a few elements costs less than
//! a B-tree's node walk (issue 33: a B-tree of the vruntimes cost
//! periodic-64 1.7 % more instructions); both vectors cost O(n) per change.

use super::fair::SeId;

/// One queued entity: the keys it was queued with.
#[derive(Clone, Copy, Debug)]
struct Node {
    deadline: i64,
    seq: u64,
    id: SeId,
    vruntime: i64,
}

#[derive(Clone, Debug, Default)]
pub struct Timeline {
    /// Sorted by (deadline, seq).
    nodes: Vec<Node>,
    /// (vruntime, seq) of every node, sorted: the first is the smallest
    /// vruntime.
    vruntimes: Vec<(i64, u64)>,
    /// Queue order: bumped by each insertion.
    seq: u64,
}

impl Timeline {
    /// __enqueue_entity. The entity's deadline and vruntime must not change
    /// until it is removed (the kernel dequeues before changing either).
    pub fn insert(&mut self, id: SeId, deadline: i64, vruntime: i64) {
        self.seq += 1;
        let seq = self.seq;
        let i = self.nodes.partition_point(|n| n.deadline <= deadline);
        self.nodes.insert(
            i,
            Node {
                deadline,
                seq,
                id,
                vruntime,
            },
        );
        let key = (vruntime, seq);
        let j = self.vruntimes.partition_point(|&k| k < key);
        self.vruntimes.insert(j, key);
    }

    /// __dequeue_entity, given the entity's keys (unchanged since insert).
    pub fn remove(&mut self, id: SeId, deadline: i64, vruntime: i64) {
        let from = self.nodes.partition_point(|n| n.deadline < deadline);
        let at = self.nodes[from..]
            .iter()
            .take_while(|n| n.deadline == deadline)
            .position(|n| n.id == id)
            .map(|k| from + k);
        debug_assert!(
            at.is_some(),
            "entity {id} changed its deadline while queued"
        );
        let Some(i) = at.or_else(|| self.nodes.iter().position(|n| n.id == id)) else {
            return;
        };
        let n = self.nodes.remove(i);
        debug_assert_eq!(
            n.vruntime, vruntime,
            "entity {id} changed its vruntime while queued"
        );
        let key = (n.vruntime, n.seq);
        if let Ok(j) = self.vruntimes.binary_search(&key) {
            self.vruntimes.remove(j);
        }
    }

    /// The smallest vruntime queued.
    pub fn min_vruntime(&self) -> Option<i64> {
        self.vruntimes.first().map(|&(v, _)| v)
    }

    /// __pick_first_entity: the earliest deadline.
    pub fn first(&self) -> Option<SeId> {
        self.nodes.first().map(|n| n.id)
    }

    /// In deadline order.
    pub fn iter(&self) -> impl Iterator<Item = SeId> + '_ {
        self.nodes.iter().map(|n| n.id)
    }

    /// (queue order, entity) in deadline order: a smaller first field was
    /// queued earlier.
    pub fn iter_queued(&self) -> impl Iterator<Item = (u64, SeId)> + '_ {
        self.nodes.iter().map(|n| (n.seq, n.id))
    }

    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deadline_order_with_ties_in_queue_order() {
        let mut t = Timeline::default();
        t.insert(1, 50, 5);
        t.insert(2, 40, 9);
        t.insert(3, 50, 1);
        t.insert(4, 40, 7);
        assert_eq!(t.iter().collect::<Vec<_>>(), [2, 4, 1, 3]);
        let mut q: Vec<(u64, SeId)> = t.iter_queued().collect();
        q.sort_unstable();
        assert_eq!(
            q.iter().map(|&(_, id)| id).collect::<Vec<_>>(),
            [1, 2, 3, 4]
        );
        assert_eq!(t.min_vruntime(), Some(1));
        t.remove(3, 50, 1);
        assert_eq!(t.min_vruntime(), Some(5));
        t.remove(2, 40, 9);
        assert_eq!(t.first(), Some(4));
        assert_eq!(t.len(), 2);
    }
}
