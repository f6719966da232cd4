//! Workload models: idle, CPU-bound with a duty cycle, and replay of utilisation traces.
//!
//! A vCPU alternates *bursts* of CPU work and *halts*. The burst is work, not wall time: a
//! preempted burst takes longer, and the halt that follows starts only when the burst is done
//! (a closed loop, like a server that thinks after each request). So an uncontended vCPU is busy
//! `duty` of the time, and a contended one falls behind instead of queueing unbounded work.
//!
//! - `idle`: the guest halts forever (WAIT_IDLE).
//! - `cpu_bound { duty, burst_ns, burst_dist, arrivals: closed }`: bursts of mean `burst_ns`,
//!   halts of mean `burst_ns * (1 - duty) / duty`; `fixed` uses the means, `exponential` draws
//!   both. `duty = 1` never halts. The first burst starts after a random phase so that VMs do not
//!   run in lockstep.
//! - `cpu_bound { .., arrivals: open }`: an open loop. Work of mean `burst_ns` *arrives* every
//!   `burst_ns / duty` on average (fixed spacing, or Poisson for `exponential`), whether or not
//!   the last piece is done; unfinished work queues inside the guest. Its demand is exactly
//!   `duty` of each vCPU whatever the contention, which is what vCenter means by demand and what
//!   a max-min allocation is defined against: a VM below its fair share gets all of it, one above
//!   builds a backlog and stays busy.
//! - synchronous I/O (`storage.vcpu_io`, wired in `simulation/storage.rs`): any of the above
//!   wrapped so that after each burst the vCPU issues one I/O and waits ([`Next::Io`]); when the
//!   I/O completes the wrapped workload says what follows the burst ([`Workload::after_io`]).
//! - `trace { segment_ns, utilization, burst_ns, loop }`: the duty cycle of each vCPU follows a
//!   piecewise-constant utilisation (PlanetLab: 5-minute samples; Bitbrains: MHz fragments, both
//!   normalised by the Python reader). A segment with zero utilisation halts until the next one.
//!
//! # Tunables
//! All per VM in the scenario: `duty`, `burst_ns`, `burst_dist`, the trace and `loop`.
//!
//! # Counters
//! None of its own: the work shows in the vCPU states.
//!
//! # Known gaps
//! - Bursts do not carry over unmet demand between trace segments.

use crate::sim::{ns, Rng, Time};
use crate::spec::{Arrivals, BurstDist, WorkloadSpec};

/// One vCPU's guest-side state: its random stream and, for open-loop work, when the next piece
/// of work arrives (ns after power-on); for a closed-loop `cpu_bound` workload, a copy of what
/// its draws need ([`ClosedLoop`]). One cache line each (64-byte aligned): with 1,024 VMs the
/// run loop then reads one line here at a wake-up or a burst's end, and not also its VM's
/// record, whose `Workload` sits in a 192-byte `Vm` (about 0.4 L1 misses an event).
#[derive(Debug, Clone)]
#[repr(align(64))]
pub struct GuestVcpu {
    /// this vCPU's stream
    pub rng: Rng,
    /// next open-loop arrival, ns after power-on
    pub next_arrival: Time,
    /// its VM's workload when that is a closed-loop `cpu_bound` one (not wrapped for I/O):
    /// what [`Workload::on_wake`] and [`Workload::after_burst`] would read from it
    pub closed: Option<ClosedLoop>,
}

impl GuestVcpu {
    /// A vCPU's guest state with stream `rng`, for a VM running `w`.
    pub fn new(rng: Rng, w: &Workload) -> Self {
        GuestVcpu { rng, next_arrival: 0, closed: w.closed_loop() }
    }
}

/// A closed-loop `cpu_bound` workload's burst and halt draws (a copy of its parameters).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ClosedLoop {
    burst_ns: f64,
    halt_ns: f64,
    dist: BurstDist,
    /// `duty >= 1`: a burst follows a burst, no halt
    busy: bool,
}

impl ClosedLoop {
    /// [`Workload::on_wake`] (`wake`) or [`Workload::after_burst`] of the workload it copies,
    /// with the same draws from `rng`.
    #[inline(always)]
    pub fn next(self, wake: bool, rng: &mut Rng) -> Next {
        if wake || self.busy {
            Next::Work(draw(self.burst_ns, self.dist, rng))
        } else {
            Next::Halt(draw(self.halt_ns, self.dist, rng))
        }
    }
}

/// What a vCPU does next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// run a burst of this many ns of CPU work
    Work(Time),
    /// halt for this long, then ask again
    Halt(Time),
    /// halt for good
    HaltForever,
    /// issue a synchronous I/O and wait for it (WAIT) before going on
    Io,
    /// blocked in the VMkernel (WAIT) until a subsystem resumes it, as a swap-in does
    Wait,
}

/// A VM's workload model (shared by its vCPUs; each vCPU brings its own random stream).
///
/// `repr(u8)`: the variant is a byte of its own, read with one load and compared at every
/// wake-up and burst's end (the run loop's barrier test, then `on_wake` or `after_burst`).
/// Without it Rust keeps the variant in a niche of `Trace`'s vector, which took eight
/// instructions to decode at each of those tests. Each variant's small fields come first, so
/// the enum stays 64 bytes (a tag byte before the vectors would have padded it to 72).
#[derive(Debug, Clone)]
#[repr(u8)]
pub enum Workload {
    /// always halted
    Idle,
    /// duty-cycle bursts
    CpuBound {
        /// burst and halt distribution
        dist: BurstDist,
        /// closed loop (think after each burst) or open loop (work arrives on its own clock)
        arrivals: Arrivals,
        /// busy fraction in (0, 1]
        duty: f64,
        /// mean burst, ns
        burst_ns: f64,
        /// closed loop: mean halt after a burst, `burst_ns * (1 - duty) / duty` ns (computed once
        /// here: a division per burst showed in the run loop's profile)
        halt_ns: f64,
        /// open loop: mean gap between arrivals, `burst_ns / duty` ns
        gap_ns: f64,
    },
    /// piecewise-constant utilisation
    Trace {
        /// start over at the end
        repeat: bool,
        /// start of each segment relative to power-on, plus the end of the last
        starts: Vec<Time>,
        /// utilisation of each segment, clamped to [0, 1]
        utilization: Vec<f64>,
        /// burst, ns
        burst_ns: f64,
    },
    /// the wrapped workload, with one synchronous I/O after each burst
    SyncIo(Box<Workload>),
    /// threads that compute a phase and wait at a barrier for each other (`barrier.rs`); run
    /// through the run loop's barrier hook, which holds the program's shared state
    Barrier(Box<super::BarrierGroup>),
}

impl Workload {
    /// Build from the spec (already validated by the scenario layer; re-checked here).
    pub fn from_spec(spec: &WorkloadSpec, path: &str) -> crate::VmtwinResult<Self> {
        use crate::invalid;
        Ok(match spec {
            WorkloadSpec::Idle => Workload::Idle,
            WorkloadSpec::CpuBound { duty, burst_ns, burst_dist, arrivals } => {
                if !(*duty > 0.0 && *duty <= 1.0) {
                    invalid!(format!("{path}.duty"), duty, "a number in (0, 1]");
                }
                if *burst_ns == 0 {
                    invalid!(format!("{path}.burst"), burst_ns, "a duration > 0");
                }
                Workload::cpu_bound(*duty, *burst_ns as f64, *burst_dist, *arrivals)
            }
            WorkloadSpec::Trace { segment_ns, utilization, burst_ns, repeat } => {
                if segment_ns.is_empty() || segment_ns.len() != utilization.len() {
                    invalid!(
                        format!("{path}.trace"),
                        format!("{} segments, {} values", segment_ns.len(), utilization.len()),
                        "a non-empty trace with one value per segment"
                    );
                }
                if *burst_ns == 0 {
                    invalid!(format!("{path}.burst"), burst_ns, "a duration > 0");
                }
                let mut starts = Vec::with_capacity(segment_ns.len() + 1);
                let mut t: Time = 0;
                for (i, &d) in segment_ns.iter().enumerate() {
                    if d == 0 {
                        invalid!(format!("{path}.trace segment {i}"), d, "a duration > 0");
                    }
                    starts.push(t);
                    t += d;
                }
                starts.push(t);
                let utilization = utilization.iter().map(|u| if u.is_finite() { u.clamp(0.0, 1.0) } else { 0.0 }).collect();
                Workload::Trace { starts, utilization, burst_ns: *burst_ns as f64, repeat: *repeat }
            }
            WorkloadSpec::Barrier { phase_ns, phase_dist, wait, spin_limit_ns, spin_poll_ns } => {
                if *phase_ns == 0 {
                    invalid!(format!("{path}.phase"), phase_ns, "a duration > 0");
                }
                if *spin_poll_ns == 0 {
                    invalid!(format!("{path}.spin_poll"), spin_poll_ns, "a duration > 0");
                }
                Workload::Barrier(Box::new(super::BarrierGroup::new(*phase_ns, *phase_dist, *wait, *spin_limit_ns, *spin_poll_ns)))
            }
        })
    }

    /// A `cpu_bound` workload (`duty` in (0, 1], `burst_ns` > 0), with its derived means.
    pub fn cpu_bound(duty: f64, burst_ns: f64, dist: BurstDist, arrivals: Arrivals) -> Self {
        Workload::CpuBound { duty, burst_ns, halt_ns: burst_ns * (1.0 - duty) / duty, gap_ns: burst_ns / duty, dist, arrivals }
    }

    /// The copy a vCPU keeps of a closed-loop `cpu_bound` workload ([`GuestVcpu::closed`]);
    /// none for any other, or one wrapped for I/O.
    pub fn closed_loop(&self) -> Option<ClosedLoop> {
        match self {
            Workload::CpuBound { arrivals: Arrivals::Closed, duty, burst_ns, halt_ns, dist, .. } => {
                Some(ClosedLoop { burst_ns: *burst_ns, halt_ns: *halt_ns, dist: *dist, busy: *duty >= 1.0 })
            }
            _ => None,
        }
    }

    /// What a vCPU does at power-on.
    pub fn at_power_on(&self, g: &mut GuestVcpu) -> Next {
        match self {
            Workload::SyncIo(w) => w.at_power_on(g),
            Workload::Idle => Next::HaltForever,
            Workload::CpuBound { duty, burst_ns, arrivals, .. } => {
                if *duty >= 1.0 && *arrivals == Arrivals::Closed {
                    return Next::Halt(0);
                }
                // random phase over one burst + halt cycle
                let phase = ns(g.rng.uniform() * burst_ns / duty);
                g.next_arrival = phase;
                Next::Halt(phase)
            }
            Workload::Trace { burst_ns, .. } => Next::Halt(ns(g.rng.uniform() * burst_ns)),
            Workload::Barrier(b) => b.at_power_on(),
        }
    }

    /// What a halted vCPU does when its halt ends, `t` ns after power-on.
    #[inline]
    pub fn on_wake(&self, t: Time, g: &mut GuestVcpu) -> Next {
        match self {
            Workload::SyncIo(w) => w.base_on_wake(t, g),
            base => base.base_on_wake(t, g),
        }
    }

    /// [`Workload::on_wake`] of a workload that is not [`Workload::SyncIo`] (kept apart so that
    /// neither calls itself: the hot path inlines them).
    #[inline(always)]
    fn base_on_wake(&self, t: Time, g: &mut GuestVcpu) -> Next {
        match self {
            Workload::SyncIo(_) => unreachable!("synchronous I/O wraps a base workload"),
            Workload::Idle => Next::HaltForever,
            Workload::CpuBound { arrivals: Arrivals::Open, .. } => self.arrived(t, g),
            Workload::CpuBound { burst_ns, dist, .. } => Next::Work(draw(*burst_ns, *dist, &mut g.rng)),
            Workload::Trace { burst_ns, .. } => match self.trace_at(t) {
                (u, _) if u > 0.0 => Next::Work(ns(*burst_ns)),
                (_, Some(next)) => Next::Halt(next - t),
                (_, None) => Next::HaltForever,
            },
            Workload::Barrier(_) => unreachable!("a barrier workload runs through the run loop's barrier hook"),
        }
    }

    /// What a vCPU does when a burst completes, `t` ns after power-on.
    #[inline]
    pub fn after_burst(&self, t: Time, g: &mut GuestVcpu) -> Next {
        match self {
            Workload::SyncIo(_) => Next::Io,
            base => base.base_after_burst(t, g),
        }
    }

    /// [`Workload::after_burst`] of a workload that is not [`Workload::SyncIo`].
    #[inline(always)]
    fn base_after_burst(&self, t: Time, g: &mut GuestVcpu) -> Next {
        match self {
            Workload::SyncIo(_) => unreachable!("synchronous I/O wraps a base workload"),
            Workload::Idle => Next::HaltForever,
            Workload::CpuBound { arrivals: Arrivals::Open, .. } => self.arrived(t, g),
            Workload::CpuBound { duty, burst_ns, halt_ns, dist, .. } => {
                if *duty >= 1.0 {
                    Next::Work(draw(*burst_ns, *dist, &mut g.rng))
                } else {
                    Next::Halt(draw(*halt_ns, *dist, &mut g.rng))
                }
            }
            Workload::Trace { burst_ns, .. } => match self.trace_at(t) {
                (u, _) if u >= 1.0 => Next::Work(ns(*burst_ns)),
                (u, _) if u > 0.0 => Next::Halt(ns(burst_ns * (1.0 - u) / u)),
                (_, Some(next)) => Next::Halt(next - t),
                (_, None) => Next::HaltForever,
            },
            Workload::Barrier(_) => unreachable!("a barrier workload runs through the run loop's barrier hook"),
        }
    }

    /// After a burst's synchronous I/O completed: what the wrapped workload does after the burst.
    pub fn after_io(&self, t: Time, g: &mut GuestVcpu) -> Next {
        match self {
            Workload::SyncIo(w) => w.base_after_burst(t, g),
            base => base.base_after_burst(t, g),
        }
    }

    /// Open loop: the work that has arrived by `t` (queued in the guest), or a halt until the
    /// next arrival.
    fn arrived(&self, t: Time, g: &mut GuestVcpu) -> Next {
        let Workload::CpuBound { burst_ns, gap_ns, dist, .. } = self else {
            unreachable!("open loop is a cpu_bound workload")
        };
        // the stream and the next arrival in locals, written back once: in `g` they were stored
        // at every arrival (the draws' rare slow paths call `exp` and `ln`)
        let (mut rng, mut next) = (g.rng.clone(), g.next_arrival);
        let mut work: Time = 0;
        while next <= t {
            work += draw(*burst_ns, *dist, &mut rng).max(1);
            next += draw(*gap_ns, *dist, &mut rng).max(1);
        }
        (g.rng, g.next_arrival) = (rng, next);
        if work > 0 {
            Next::Work(work)
        } else {
            Next::Halt(next - t)
        }
    }

    /// Mean demand of one vCPU between `t0` and `t1` ns after power-on, as a fraction of a
    /// pCPU: what it would use with no contention and no limit.
    pub fn demand(&self, t0: Time, t1: Time) -> f64 {
        match self {
            Workload::SyncIo(w) => w.demand(t0, t1),
            Workload::Idle => 0.0,
            Workload::CpuBound { duty, .. } => *duty,
            Workload::Barrier(b) => b.demand(),
            Workload::Trace { .. } => {
                if t1 <= t0 {
                    return self.trace_at(t0).0;
                }
                let mut t = t0;
                let mut area = 0.0;
                while t < t1 {
                    let (u, next) = self.trace_at(t);
                    let end = next.map_or(t1, |n| n.min(t1));
                    area += u * (end - t) as f64;
                    if next.is_none() {
                        break;
                    }
                    t = end;
                }
                area / (t1 - t0) as f64
            }
        }
    }

    /// Utilisation at `t` and the start of the next segment (absolute, after power-on), if any.
    fn trace_at(&self, t: Time) -> (f64, Option<Time>) {
        let Workload::Trace { starts, utilization, repeat, .. } = self else {
            return (0.0, None);
        };
        let total = *starts.last().expect("non-empty");
        let (base, local) = if t >= total {
            if !repeat {
                return (0.0, None);
            }
            (t - t % total, t % total)
        } else {
            (0, t)
        };
        // last segment whose start <= local
        let k = starts.partition_point(|&s| s <= local) - 1;
        (utilization[k], Some(base + starts[k + 1]))
    }
}

// the tag byte and the small fields share the first word (see `Workload`)
const _: () = assert!(std::mem::size_of::<Workload>() == 64);

#[inline(always)]
fn draw(mean: f64, dist: BurstDist, rng: &mut Rng) -> Time {
    match dist {
        BurstDist::Fixed => ns(mean),
        BurstDist::Exponential => rng.exponential(mean),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::NS_PER_S;

    fn trace(repeat: bool) -> Workload {
        Workload::from_spec(
            &WorkloadSpec::Trace {
                segment_ns: vec![NS_PER_S, NS_PER_S],
                utilization: vec![0.0, 0.5],
                burst_ns: 10_000_000,
                repeat,
            },
            "vms[0].workload",
        )
        .unwrap()
    }

    #[test]
    fn sync_io_waits_after_each_burst_then_follows_the_wrapped_workload() {
        let base = Workload::cpu_bound(0.5, 1e6, BurstDist::Exponential, Arrivals::Closed);
        let io = Workload::SyncIo(Box::new(base.clone()));
        let (mut a, mut b) = (GuestVcpu { rng: Rng::new(9), next_arrival: 0, closed: None }, GuestVcpu { rng: Rng::new(9), next_arrival: 0, closed: None });
        assert_eq!(io.at_power_on(&mut a), base.at_power_on(&mut b));
        for k in 0..50 {
            let t = k * 1_000_000;
            assert_eq!(io.on_wake(t, &mut a), base.on_wake(t, &mut b));
            assert_eq!(io.after_burst(t, &mut a), Next::Io, "no draw: the streams stay aligned");
            assert_eq!(io.after_io(t, &mut a), base.after_burst(t, &mut b));
        }
        assert_eq!(io.demand(0, 10), base.demand(0, 10));
    }

    /// The run loop's copy of a closed loop draws what the workload draws, from the same
    /// stream, and there is none for an open loop or one wrapped for I/O.
    #[test]
    fn closed_loop_copy_draws_what_the_workload_draws() {
        for (duty, dist) in [(0.3, BurstDist::Exponential), (0.3, BurstDist::Fixed), (1.0, BurstDist::Exponential)] {
            let w = Workload::cpu_bound(duty, 2e6, dist, Arrivals::Closed);
            let c = w.closed_loop().expect("a closed loop keeps a copy");
            let (mut a, mut b) = (GuestVcpu::new(Rng::new(7), &w), GuestVcpu::new(Rng::new(7), &w));
            for k in 0..200u64 {
                let wake = k % 3 == 0;
                let want = if wake { w.on_wake(k, &mut a) } else { w.after_burst(k, &mut a) };
                assert_eq!(c.next(wake, &mut b.rng), want, "duty {duty}, {dist:?}, step {k}");
            }
            assert_eq!(a.rng.uniform(), b.rng.uniform(), "the streams stay in step");
        }
        let open = Workload::cpu_bound(0.3, 2e6, BurstDist::Exponential, Arrivals::Open);
        assert_eq!(open.closed_loop(), None);
        let closed = Workload::cpu_bound(0.3, 2e6, BurstDist::Exponential, Arrivals::Closed);
        assert_eq!(Workload::SyncIo(Box::new(closed)).closed_loop(), None);
    }

    #[test]
    fn trace_zero_segment_halts_until_next_segment() {
        let mut rng = GuestVcpu { rng: Rng::new(1), next_arrival: 0, closed: None };
        assert_eq!(trace(false).on_wake(NS_PER_S / 4, &mut rng), Next::Halt(3 * NS_PER_S / 4));
    }

    #[test]
    fn trace_half_utilisation_halts_as_long_as_it_runs() {
        let mut rng = GuestVcpu { rng: Rng::new(1), next_arrival: 0, closed: None };
        assert_eq!(trace(false).after_burst(NS_PER_S + 1, &mut rng), Next::Halt(10_000_000));
    }

    #[test]
    fn trace_ends_or_loops() {
        let mut rng = GuestVcpu { rng: Rng::new(1), next_arrival: 0, closed: None };
        assert_eq!(trace(false).on_wake(3 * NS_PER_S, &mut rng), Next::HaltForever);
        assert_eq!(trace(true).on_wake(2 * NS_PER_S + 5, &mut rng), Next::Halt(NS_PER_S - 5));
    }

    #[test]
    fn open_loop_queues_what_arrived() {
        let w = Workload::from_spec(
            &WorkloadSpec::CpuBound { duty: 0.25, burst_ns: 10, burst_dist: BurstDist::Fixed, arrivals: Arrivals::Open },
            "vms[0].workload",
        )
        .unwrap();
        let mut g = GuestVcpu { rng: Rng::new(1), next_arrival: 0, closed: None };
        let Next::Halt(phase) = w.at_power_on(&mut g) else { panic!() };
        // arrivals every 40 ns from the phase on: three have arrived 85 ns later
        assert_eq!(w.on_wake(phase + 85, &mut g), Next::Work(30));
        assert_eq!(w.after_burst(phase + 100, &mut g), Next::Halt(20));
        assert_eq!(w.demand(0, 1000), 0.25);
    }

    #[test]
    fn trace_demand_averages_segments() {
        assert_eq!(trace(false).demand(NS_PER_S / 2, 3 * NS_PER_S / 2), 0.25);
        assert_eq!(trace(false).demand(3 * NS_PER_S, 4 * NS_PER_S), 0.0);
    }

    #[test]
    fn bad_duty_names_the_field() {
        let err = Workload::from_spec(
            &WorkloadSpec::CpuBound { duty: 1.5, burst_ns: 1, burst_dist: BurstDist::Fixed, arrivals: Arrivals::Closed },
            "vms[3].workload",
        )
        .unwrap_err()
        .to_string();
        assert!(err.starts_with("vms[3].workload.duty: got 1.5"), "{err}");
    }
}
