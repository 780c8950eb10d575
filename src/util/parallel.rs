//! Independent simulation runs spread over the host's cores. Each run is
//! deterministic on its own, so the results do not depend on the threads.

/// `f(0)`, …, `f(n − 1)` on all cores (job i on thread i mod threads):
/// the results in job order, or the first error in job order.
pub fn par_map<T: Send>(
    n: usize,
    f: impl Fn(usize) -> Result<T, String> + Sync,
) -> Result<Vec<T>, String> {
    let threads = std::thread::available_parallelism().map_or(1, |t| t.get());
    let mut out: Vec<Option<Result<T, String>>> = (0..n).map(|_| None).collect();
    std::thread::scope(|s| {
        let f = &f;
        let handles: Vec<_> = (0..threads.min(n))
            .map(|t| {
                s.spawn(move || {
                    (t..n)
                        .step_by(threads)
                        .map(|i| (i, f(i)))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        for h in handles {
            // A thread that panicked leaves its jobs empty.
            for (i, r) in h.join().unwrap_or_default() {
                out[i] = Some(r);
            }
        }
    });
    out.into_iter()
        .map(|r| r.unwrap_or(Err("a run panicked".into())))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_in_job_order_and_first_error_wins() {
        assert_eq!(par_map(7, |i| Ok(i * i)), Ok(vec![0, 1, 4, 9, 16, 25, 36]));
        let r = par_map(5, |i| {
            if i >= 2 {
                Err(format!("job {i}"))
            } else {
                Ok(i)
            }
        });
        assert_eq!(r, Err("job 2".to_string()));
        assert_eq!(par_map(0, Ok), Ok(vec![]));
    }
}
