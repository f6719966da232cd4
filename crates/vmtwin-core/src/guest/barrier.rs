//! Barrier-synchronised multi-threaded guests: PARSEC-like data-parallel programs, one thread per
//! vCPU, that compute a phase and then wait at a barrier until every thread has finished it.
//!
//! Each thread draws its phase's CPU work (mean `phase_ns`, `fixed` or `exponential`: threads
//! that reach the barrier at different times), runs it as one burst, and *arrives*. The last
//! thread to arrive completes the barrier (one barrier per phase: the program's throughput is
//! barriers per second) and starts its next phase at once; the others are released:
//!
//! - `wait: spin` (the default): an early thread busy-waits on its vCPU. It stays runnable and
//!   uses CPU that does no useful work, which is what makes co-scheduling matter: a thread that
//!   spins for a descheduled sibling burns its pCPU until the sibling runs (research/cpu.md C16,
//!   "a vCPU's useful work is zero while it spins waiting for a descheduled sibling"; A4: co-running
//!   "reduces synchronization latency", e.g. a spin-wait). The model spins in polls of
//!   `spin_poll_ns` of CPU and looks at the barrier after each, so a spinner sees its release
//!   up to one poll late (a real one within a cache-line transfer; the poll is the model's
//!   granularity, not the guest's).
//! - `wait: halt`: an early thread blocks (a futex-based barrier such as glibc's
//!   `pthread_barrier_wait`, with nothing else runnable in the guest), its vCPU halts, and the
//!   last thread's arrival wakes it (an IPI in a real guest, immediate here). A halted vCPU
//!   makes progress for co-scheduling (A2), so halting barriers add no skew.
//! - `spin_limit_ns`: spin at most this much CPU at one barrier, then halt (the spin-then-block
//!   of many runtimes' barriers).
//!
//! Uncontended, with fixed phases every thread arrives together and the program is busy all the
//! time; with exponential phases each barrier waits for the slowest of n threads, whose mean is
//! `phase_ns * H_n` (the n-th harmonic number), so a halting program's demand per vCPU is
//! `1 / H_n` and a spinning one's is 1 ([`BarrierGroup::demand`]).
//!
//! **Execution speed.** `phase` is a phase's CPU time alone on a warm cache with local memory.
//! When the VM has an execution-speed profile (`perf`), a phase takes that times the vCPU's
//! slowdown under the model's cache, NUMA and lock penalties (`perf::slowdown`): sharing the LLC
//! with busy co-runners, refilling after moves, remote memory make phases, and so barriers,
//! slower. The slowdown is the one the model measured over the vCPU's last sample interval (the
//! model runs at samples, never on the scheduler's path), so it follows conditions one interval
//! late. A busy hyperthread sibling is not in it: the scheduler already runs such a thread slower.
//!
//! # Tunables
//! Per VM in the scenario (`workload: {type: barrier}`): `phase`, `phase_distribution`, `wait`,
//! `spin_limit`, `spin_poll` ([`DEFAULT_SPIN_POLL_NS`], 50 us: chosen, [R]; 1% of a 5 ms phase).
//!
//! # Counters
//! Per VM (`barrier` table, per sample interval): barriers completed and per second, useful
//! (phase) CPU ns, spinning CPU ns.
//!
//! # Known gaps
//! - One thread per vCPU, one barrier shared by all of them; no locks, no nested or partial
//!   barriers, no guest scheduler multiplexing threads.
//! - Not combinable with synchronous I/O after each burst (`storage.vcpu_io`): refused.
//! - The speed of a phase is fixed when it starts (the last interval's slowdown), not updated
//!   while it runs.
//! - `vcpu_perf` counts a spinning thread's run time as work like any other (a spin loop does
//!   retire instructions); the program's throughput is the `barrier` table's.

use crate::guest::Next;
use crate::sim::{ns, Rng, Time};
use crate::spec::{BarrierWait, BurstDist};

/// Default CPU time a spinning thread spins between looks at its barrier: 50 us (chosen [R]:
/// it delays a spinner's release by at most 1% of a 5 ms phase while keeping the events of a
/// long spin to 20 per ms).
pub const DEFAULT_SPIN_POLL_NS: Time = 50_000;

/// Where one thread is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Phase {
    /// powered on, not started
    #[default]
    Start,
    /// running its phase's work
    Computing,
    /// arrived, spinning in polls
    Spinning,
    /// arrived, halted until released
    Halted,
}

#[derive(Debug, Clone, Copy, Default)]
struct Thread {
    at: Phase,
    /// the barrier (generation) it waits at
    waits_for: u64,
    /// CPU work of its current phase, ns
    work: Time,
    /// CPU spun at the current barrier, ns
    spun: Time,
    /// length of the poll in progress, ns
    poll: Time,
}

/// One VM's barrier program: its parameters, its threads and its counters.
#[derive(Debug, Clone)]
pub struct BarrierGroup {
    phase_ns: f64,
    dist: BurstDist,
    wait: BarrierWait,
    spin_limit_ns: Option<Time>,
    spin_poll_ns: Time,
    threads: Vec<Thread>,
    arrived: usize,
    generation: u64,
    /// barriers completed
    pub barriers: u64,
    /// CPU ns of phase work completed (useful work)
    pub work_ns: u64,
    /// CPU ns spent spinning at barriers
    pub spin_ns: u64,
    /// the counters at the last sample: barriers, work ns, spin ns
    pub sampled: [u64; 3],
}

impl BarrierGroup {
    /// A program with these parameters; its threads are set by [`BarrierGroup::set_threads`].
    pub fn new(phase_ns: Time, dist: BurstDist, wait: BarrierWait, spin_limit_ns: Option<Time>, spin_poll_ns: Time) -> Self {
        BarrierGroup {
            phase_ns: phase_ns as f64,
            dist,
            wait,
            spin_limit_ns,
            spin_poll_ns,
            threads: Vec::new(),
            arrived: 0,
            generation: 0,
            barriers: 0,
            work_ns: 0,
            spin_ns: 0,
            sampled: [0; 3],
        }
    }

    /// One thread per vCPU of its VM.
    pub fn set_threads(&mut self, n: usize) {
        self.threads = vec![Thread::default(); n];
    }

    /// At power-on every thread starts its first phase (now: a halt of 0).
    pub fn at_power_on(&self) -> Next {
        Next::Halt(0)
    }

    /// Thread `i`'s vCPU woke from a halt: at power-on, or released from the barrier. A phase it
    /// starts takes `slowdown` times its drawn work (the execution-speed model's, 1 without one).
    pub fn on_wake(&mut self, i: usize, rng: &mut Rng, slowdown: f64) -> Next {
        let t = &self.threads[i];
        match t.at {
            Phase::Start => self.compute(i, rng, slowdown),
            Phase::Halted if self.generation > t.waits_for => self.compute(i, rng, slowdown),
            // woken while still waiting (not by the barrier): halt again
            _ => Next::HaltForever,
        }
    }

    /// Thread `i`'s burst is done (its phase's work or a poll of its spin). The indices of
    /// halted threads the barrier releases are appended to `wake`; `slowdown` as for
    /// [`BarrierGroup::on_wake`].
    pub fn after_burst(&mut self, i: usize, rng: &mut Rng, wake: &mut Vec<usize>, slowdown: f64) -> Next {
        match self.threads[i].at {
            Phase::Computing => {
                self.work_ns += self.threads[i].work;
                self.arrive(i, rng, wake, slowdown)
            }
            Phase::Spinning => {
                let t = &mut self.threads[i];
                self.spin_ns += t.poll;
                t.spun += t.poll;
                if self.generation > t.waits_for {
                    self.compute(i, rng, slowdown)
                } else {
                    self.spin(i)
                }
            }
            // a halted or unstarted thread runs no burst
            Phase::Halted | Phase::Start => Next::HaltForever,
        }
    }

    /// Thread `i` reached the barrier.
    fn arrive(&mut self, i: usize, rng: &mut Rng, wake: &mut Vec<usize>, slowdown: f64) -> Next {
        self.arrived += 1;
        if self.arrived == self.threads.len() {
            self.arrived = 0;
            self.generation += 1;
            self.barriers += 1;
            wake.extend(self.threads.iter().enumerate().filter(|&(j, t)| j != i && t.at == Phase::Halted).map(|(j, _)| j));
            return self.compute(i, rng, slowdown);
        }
        let t = &mut self.threads[i];
        t.waits_for = self.generation;
        t.spun = 0;
        match self.wait {
            BarrierWait::Spin => self.spin(i),
            BarrierWait::Halt => {
                t.at = Phase::Halted;
                Next::HaltForever
            }
        }
    }

    /// Thread `i` spins one more poll, or halts once it has spun `spin_limit_ns`.
    fn spin(&mut self, i: usize) -> Next {
        let t = &mut self.threads[i];
        let left = self.spin_limit_ns.map_or(Time::MAX, |l| l.saturating_sub(t.spun));
        if left == 0 {
            t.at = Phase::Halted;
            return Next::HaltForever;
        }
        t.at = Phase::Spinning;
        t.poll = self.spin_poll_ns.min(left);
        Next::Work(t.poll)
    }

    /// Thread `i` starts a phase: its work drawn, then stretched by `slowdown`.
    fn compute(&mut self, i: usize, rng: &mut Rng, slowdown: f64) -> Next {
        let drawn = match self.dist {
            BurstDist::Fixed => ns(self.phase_ns),
            BurstDist::Exponential => rng.exponential(self.phase_ns),
        };
        let work = if slowdown == 1.0 { drawn } else { ns(drawn as f64 * slowdown) }.max(1);
        let t = &mut self.threads[i];
        t.at = Phase::Computing;
        t.work = work;
        Next::Work(work)
    }

    /// What one vCPU would use with no contention, as a fraction of a pCPU: 1 when every
    /// thread finishes together (fixed phases) or waits by spinning; `1 / H_n` for halting
    /// waits on exponential phases (the slowest of n threads takes `H_n` mean phases). With a
    /// spin limit, the halting value (a lower bound).
    pub fn demand(&self) -> f64 {
        let n = self.threads.len().max(1);
        match (self.dist, self.wait, self.spin_limit_ns) {
            (BurstDist::Fixed, ..) | (_, BarrierWait::Spin, None) => 1.0,
            _ => 1.0 / (1..=n).map(|k| 1.0 / k as f64).sum::<f64>(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn group(wait: BarrierWait, n: usize) -> BarrierGroup {
        let mut g = BarrierGroup::new(1000, BurstDist::Fixed, wait, None, 100);
        g.set_threads(n);
        g
    }

    #[test]
    fn the_last_arrival_completes_the_barrier_and_wakes_the_halted() {
        let mut g = group(BarrierWait::Halt, 3);
        let mut rng = Rng::new(1);
        let mut wake = vec![];
        for i in 0..3 {
            assert_eq!(g.on_wake(i, &mut rng, 1.0), Next::Work(1000));
        }
        assert_eq!(g.after_burst(0, &mut rng, &mut wake, 1.0), Next::HaltForever);
        assert_eq!(g.after_burst(2, &mut rng, &mut wake, 1.0), Next::HaltForever);
        assert!(wake.is_empty());
        // the last one goes straight on, and releases the two halted threads
        assert_eq!(g.after_burst(1, &mut rng, &mut wake, 1.0), Next::Work(1000));
        assert_eq!(wake, vec![0, 2]);
        assert_eq!((g.barriers, g.work_ns, g.spin_ns), (1, 3000, 0));
        assert_eq!(g.on_wake(0, &mut rng, 1.0), Next::Work(1000));
    }

    #[test]
    fn a_spinner_polls_until_released_and_counts_its_spin() {
        let mut g = group(BarrierWait::Spin, 2);
        let mut rng = Rng::new(1);
        let mut wake = vec![];
        g.on_wake(0, &mut rng, 1.0);
        g.on_wake(1, &mut rng, 1.0);
        assert_eq!(g.after_burst(0, &mut rng, &mut wake, 1.0), Next::Work(100));
        assert_eq!(g.after_burst(0, &mut rng, &mut wake, 1.0), Next::Work(100));
        assert_eq!(g.after_burst(1, &mut rng, &mut wake, 1.0), Next::Work(1000));
        assert!(wake.is_empty(), "spinners are not woken: they look");
        // its poll in progress ends, it sees the release and computes
        assert_eq!(g.after_burst(0, &mut rng, &mut wake, 1.0), Next::Work(1000));
        assert_eq!((g.barriers, g.spin_ns), (1, 200));
    }

    #[test]
    fn a_spin_limit_turns_the_spinner_into_a_halted_waiter() {
        let mut g = BarrierGroup::new(1000, BurstDist::Fixed, BarrierWait::Spin, Some(250), 100);
        g.set_threads(2);
        let mut rng = Rng::new(1);
        let mut wake = vec![];
        g.on_wake(0, &mut rng, 1.0);
        g.on_wake(1, &mut rng, 1.0);
        assert_eq!(g.after_burst(0, &mut rng, &mut wake, 1.0), Next::Work(100));
        assert_eq!(g.after_burst(0, &mut rng, &mut wake, 1.0), Next::Work(100));
        assert_eq!(g.after_burst(0, &mut rng, &mut wake, 1.0), Next::Work(50));
        assert_eq!(g.after_burst(0, &mut rng, &mut wake, 1.0), Next::HaltForever);
        assert_eq!(g.spin_ns, 250);
        g.after_burst(1, &mut rng, &mut wake, 1.0);
        assert_eq!(wake, vec![0]);
    }

    #[test]
    fn demand_is_one_over_the_harmonic_number_for_halting_exponential_phases() {
        let mut g = BarrierGroup::new(1000, BurstDist::Exponential, BarrierWait::Halt, None, 100);
        g.set_threads(4);
        assert!((g.demand() - 12.0 / 25.0).abs() < 1e-12); // H_4 = 25/12
        assert_eq!(group(BarrierWait::Halt, 4).demand(), 1.0);
        let mut s = BarrierGroup::new(1000, BurstDist::Exponential, BarrierWait::Spin, None, 100);
        s.set_threads(4);
        assert_eq!(s.demand(), 1.0);
    }
}
