//! Communication between the ranks of a distributed build (see [`crate::distributed`]).
//!
//! The distributed builder needs only three collective operations, each called by every rank
//! in the same order from its main thread (never from a rayon worker):
//!
//! - [`Comm::exchange`]: every rank hands every rank a list of words (all-to-all, variable
//!   counts); updates are combined into one message per pair of ranks per round;
//! - [`Comm::sum`]: element-wise sums over the ranks (termination tests, counts, decisions);
//! - [`Comm::barrier`].
//!
//! Two implementations: [`ThreadComm`], ranks as threads of one process (for tests, and to
//! check the distributed algorithm without MPI), and, with the cargo feature `mpi`,
//! `MpiComm` over the MPI library the cluster provides.

use std::sync::{Arc, Barrier, Mutex};

/// The collective operations of a distributed build. Every rank must call the same operations
/// in the same order.
pub trait Comm {
    /// This rank, 0..size.
    fn rank(&self) -> usize;
    /// The number of ranks.
    fn size(&self) -> usize;
    /// Send `out[r]` to rank r, for every r (including this rank); returns what each rank
    /// sent to this one, indexed by the sender.
    fn exchange(&self, out: Vec<Vec<u64>>) -> Vec<Vec<u64>>;
    /// The element-wise sum over the ranks of `x` (every rank passes as many elements).
    fn sum(&self, x: &[u64]) -> Vec<u64>;
    /// Wait until every rank has called it.
    fn barrier(&self);
}

/// Ranks as threads of one process, communicating through shared memory.
pub struct ThreadComm {
    rank: usize,
    shared: Arc<Shared>,
}

struct Shared {
    size: usize,
    barrier: Barrier,
    /// `slots[from][to]`: the words in flight.
    slots: Mutex<Vec<Vec<Vec<u64>>>>,
}

impl ThreadComm {
    /// `size` communicators, one per rank; hand each to its own thread.
    pub fn group(size: usize) -> Vec<ThreadComm> {
        assert!(size > 0, "a group needs a rank");
        let shared = Arc::new(Shared {
            size,
            barrier: Barrier::new(size),
            slots: Mutex::new(vec![vec![Vec::new(); size]; size]),
        });
        (0..size)
            .map(|rank| ThreadComm {
                rank,
                shared: Arc::clone(&shared),
            })
            .collect()
    }

    fn slots(&self) -> std::sync::MutexGuard<'_, Vec<Vec<Vec<u64>>>> {
        // A rank that panicked poisons the lock; the others should fail too, not hang on.
        self.shared.slots.lock().expect("another rank failed")
    }
}

impl Comm for ThreadComm {
    fn rank(&self) -> usize {
        self.rank
    }

    fn size(&self) -> usize {
        self.shared.size
    }

    fn exchange(&self, out: Vec<Vec<u64>>) -> Vec<Vec<u64>> {
        assert_eq!(out.len(), self.size(), "one list per rank");
        self.slots()[self.rank] = out;
        self.shared.barrier.wait();
        let got = {
            let mut slots = self.slots();
            (0..self.size())
                .map(|from| std::mem::take(&mut slots[from][self.rank]))
                .collect()
        };
        // Nobody writes the slots again before everyone has taken its words.
        self.shared.barrier.wait();
        got
    }

    fn sum(&self, x: &[u64]) -> Vec<u64> {
        let mut out = vec![Vec::new(); self.size()];
        out[0] = x.to_vec();
        let got = self.exchange(out);
        let total = if self.rank == 0 {
            let mut total = vec![0u64; x.len()];
            for part in &got {
                assert_eq!(part.len(), x.len(), "every rank sums as many elements");
                for (t, v) in total.iter_mut().zip(part) {
                    *t += v;
                }
            }
            total
        } else {
            Vec::new()
        };
        // Rank 0 hands the total back to everyone.
        let back = self.exchange(vec![total; self.size()]);
        back.into_iter().next().expect("rank 0's total")
    }

    fn barrier(&self) {
        self.shared.barrier.wait();
    }
}

#[cfg(feature = "mpi")]
pub use self::mpi_comm::MpiComm;

#[cfg(feature = "mpi")]
mod mpi_comm {
    use super::Comm;
    use mpi::collective::SystemOperation;
    use mpi::datatype::{Partition, PartitionMut};
    use mpi::topology::SimpleCommunicator;
    use mpi::traits::*;
    use mpi::Count;

    /// The ranks of an MPI job (`mpirun`, `srun`): the world communicator.
    pub struct MpiComm {
        world: SimpleCommunicator,
        _universe: mpi::environment::Universe,
    }

    impl MpiComm {
        /// Initialise MPI (only the main thread calls MPI: rayon workers never do); `None`
        /// when it cannot be initialised (already initialised, or no MPI runtime).
        pub fn init() -> Option<MpiComm> {
            let (universe, _) = mpi::initialize_with_threading(mpi::Threading::Funneled)?;
            let world = universe.world();
            Some(MpiComm {
                world,
                _universe: universe,
            })
        }
    }

    fn count(n: usize) -> Count {
        Count::try_from(n).expect("fewer than 2^31 words per message (rounds bound them)")
    }

    impl Comm for MpiComm {
        fn rank(&self) -> usize {
            self.world.rank() as usize
        }

        fn size(&self) -> usize {
            self.world.size() as usize
        }

        fn exchange(&self, out: Vec<Vec<u64>>) -> Vec<Vec<u64>> {
            let size = self.size();
            assert_eq!(out.len(), size, "one list per rank");
            // First the counts, then the words in one all-to-all-v.
            let send_counts: Vec<Count> = out.iter().map(|v| count(v.len())).collect();
            let mut recv_counts: Vec<Count> = vec![0; size];
            self.world
                .all_to_all_into(&send_counts[..], &mut recv_counts[..]);
            let displs = |counts: &[Count]| -> Vec<Count> {
                counts
                    .iter()
                    .scan(0, |acc, &c| {
                        let d = *acc;
                        *acc += c;
                        Some(d)
                    })
                    .collect()
            };
            let send_displs = displs(&send_counts);
            let recv_displs = displs(&recv_counts);
            let flat: Vec<u64> = out.concat();
            let total: usize = recv_counts.iter().map(|&c| c as usize).sum();
            let mut recv = vec![0u64; total];
            {
                let send = Partition::new(&flat[..], &send_counts[..], &send_displs[..]);
                let mut into = PartitionMut::new(&mut recv[..], &recv_counts[..], &recv_displs[..]);
                self.world.all_to_all_varcount_into(&send, &mut into);
            }
            recv_displs
                .iter()
                .zip(&recv_counts)
                .map(|(&d, &c)| recv[d as usize..(d + c) as usize].to_vec())
                .collect()
        }

        fn sum(&self, x: &[u64]) -> Vec<u64> {
            let mut total = vec![0u64; x.len()];
            self.world
                .all_reduce_into(x, &mut total[..], SystemOperation::sum());
            total
        }

        fn barrier(&self) {
            self.world.barrier();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threads_exchange_and_sum() {
        let group = ThreadComm::group(3);
        std::thread::scope(|s| {
            for comm in group {
                s.spawn(move || {
                    let me = comm.rank() as u64;
                    for round in 0..5u64 {
                        // Rank a sends rank b the words [a, b, round] (b + 1 times).
                        let out = (0..3u64)
                            .map(|b| [me, b, round].repeat(b as usize + 1))
                            .collect();
                        let got = comm.exchange(out);
                        for (a, words) in got.iter().enumerate() {
                            assert_eq!(*words, [a as u64, me, round].repeat(me as usize + 1));
                        }
                        assert_eq!(comm.sum(&[me, 1, round]), vec![3, 3, 3 * round]);
                    }
                    comm.barrier();
                });
            }
        });
    }
}
