//! cfs_rq->tasks_timeline: the queued entities other than curr, ordered by
//! virtual deadline, with the smallest vruntime at hand (the kernel's
//! rbtree is sorted by deadline and augmented with each subtree's
//! min_vruntime). Equal deadlines keep the order they were queued in, as
//! rb_add puts an equal key to the right of those already there.
//!
//! A sorted vector instead of an augmented rbtree: lookups are binary
//! searches and the scans __pick_eevdf does stop at the first eligible
//! entity, which is almost always near the front. A queue holds a few
//! entities most of the time, where moving a few elements costs less than
//! a B-tree's node walk (issue 33: a B-tree of the vruntimes cost
//! periodic-64 1.7 % more instructions); a change costs O(n). The smallest
//! vruntime is kept beside the vector, found again by a scan only when the
//! entity holding it leaves: update_curr reads it on every event, and on a
//! machine of thousands of CPUs a second vector sorted by vruntime cost a
//! cache miss per read (issue 33, BENCHMARKS.md).

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
    /// The smallest vruntime of the nodes (meaningless when there are none).
    min_vruntime: i64,
    /// Queue order: bumped by each insertion.
    seq: u64,
}

impl Timeline {
    /// __enqueue_entity. The entity's deadline and vruntime must not change
    /// until it is removed (the kernel dequeues before changing either).
    pub fn insert(&mut self, id: SeId, deadline: i64, vruntime: i64) {
        self.seq += 1;
        let seq = self.seq;
        if self.nodes.is_empty() || vruntime < self.min_vruntime {
            self.min_vruntime = vruntime;
        }
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
        if n.vruntime == self.min_vruntime {
            self.min_vruntime = self.nodes.iter().map(|n| n.vruntime).min().unwrap_or(0);
        }
    }

    /// The smallest vruntime queued.
    pub fn min_vruntime(&self) -> Option<i64> {
        (!self.nodes.is_empty()).then_some(self.min_vruntime)
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

    /// The kept minimum against the queued vruntimes' own, through random
    /// inserts and removals with ties (a removed minimum with a twin left
    /// must stay).
    #[test]
    fn min_vruntime_is_the_smallest_queued() {
        let mut t = Timeline::default();
        let mut queued: Vec<(SeId, i64, i64)> = Vec::new();
        let mut x = 12345u64;
        for id in 0..2000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let r = (x >> 33) as usize;
            if r.is_multiple_of(3) && !queued.is_empty() {
                let (q, d, v) = queued.swap_remove(r % queued.len());
                t.remove(q, d, v);
            } else {
                let (d, v) = ((r % 17) as i64, (r % 7) as i64 - 3);
                t.insert(id, d, v);
                queued.push((id, d, v));
            }
            assert_eq!(t.min_vruntime(), queued.iter().map(|q| q.2).min());
        }
    }
}
