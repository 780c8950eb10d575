//! The idle loop's choice of idle state (drivers/cpuidle, do_idle).
//!
//! The governor is modelled as a ladder: an idle CPU polls first (the
//! cpuidle POLL state, TIF_POLLING_NRFLAG set, so a wakeup needs no IPI),
//! and moves to each deeper state once it has been idle for that state's
//! target residency. The menu/teo governors predict the idle length instead;
//! the ladder is their behaviour when the prediction is "as long as so far".

use super::Kernel;
use crate::machine::IdleState;

impl Kernel {
    /// The idle state a CPU idle for `idle_for` ns is in.
    pub fn idle_state_at(&self, idle_for: u64) -> &IdleState {
        let states = &self.machine.cost.idle_states;
        states
            .iter()
            .rev()
            .find(|s| s.target_residency_ns <= idle_for)
            .unwrap_or(&states[0])
    }
}
