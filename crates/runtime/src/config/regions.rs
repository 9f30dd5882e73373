//! Tracker replicas by region (`--tracker-regions`, docs/wan.md "Tracker replicas by region").
//!
//! The replicated layout puts a replica of every tracker shard in every worker process: a
//! notification takes one network hop, but every ack piece crosses to every other process and
//! every process applies every process's acks. Across a wide area most of those copies cross
//! the same long links. With regions, one process per region (the first one listed) hosts a
//! replica; every process sends its pieces to each region's replica, and a replica notifies the
//! other processes of its region with frontier frames, one short hop. Between regions the cost
//! is that of the replicated layout (one long hop per notification); inside a region a process
//! without a replica waits one extra short hop.

use std::fmt;

/// A partition of the worker processes into regions, each given as a list of processes whose
/// first one hosts the region's replica. Written `0,5,6/1,2,4,7/3`: regions separated by `/`,
/// processes by `,`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TrackerRegions(Vec<Vec<usize>>);

impl TrackerRegions {
    /// The regions as given (each non-empty, its replica host first).
    pub fn regions(&self) -> &[Vec<usize>] {
        &self.0
    }

    /// The processes hosting a replica, one per region, in region order.
    pub fn hosts(&self) -> Vec<usize> {
        self.0.iter().map(|r| r[0]).collect()
    }

    /// The region whose replica `host` hosts (empty when `host` hosts none).
    pub fn region_of_host(&self, host: usize) -> &[usize] {
        (self.0.iter())
            .find(|r| r[0] == host)
            .map_or(&[], Vec::as_slice)
    }

    /// Checks that the regions cover the worker processes `0..worker_processes` exactly once.
    ///
    /// # Errors
    /// Names the process that is missing, repeated or not a worker process.
    pub fn check(&self, worker_processes: usize) -> Result<(), String> {
        let mut seen = vec![false; worker_processes];
        for &p in self.0.iter().flatten() {
            match seen.get_mut(p) {
                None => {
                    return Err(format!(
                        "--tracker-regions {self}: process {p} is not a worker process (the \
                         job has {worker_processes})"
                    ))
                }
                Some(true) => {
                    return Err(format!(
                        "--tracker-regions {self}: process {p} is in two regions"
                    ))
                }
                Some(s) => *s = true,
            }
        }
        match seen.iter().position(|s| !s) {
            Some(p) => Err(format!(
                "--tracker-regions {self}: process {p} is in no region (every worker process \
                 must be in one)"
            )),
            None => Ok(()),
        }
    }
}

impl fmt::Display for TrackerRegions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let regions: Vec<String> = (self.0.iter())
            .map(|r| r.iter().map(usize::to_string).collect::<Vec<_>>().join(","))
            .collect();
        f.write_str(&regions.join("/"))
    }
}

impl std::str::FromStr for TrackerRegions {
    type Err = String;

    /// `0,5,6/1,2,4,7/3`: regions separated by `/`, processes by `,` (spaces allowed).
    fn from_str(s: &str) -> Result<Self, String> {
        let regions = s
            .split('/')
            .map(|r| {
                r.split(',')
                    .map(|p| p.trim().parse::<usize>())
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|_| {
                        format!(
                            "tracker regions '{s}': expected process numbers separated by ',' \
                             and regions by '/', e.g. 0,1/2,3"
                        )
                    })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(TrackerRegions(regions))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_process_of_each_region_hosts_its_replica() {
        let r: TrackerRegions = "0,5,6/1, 2,4,7/3".parse().unwrap();
        assert_eq!(r.hosts(), vec![0, 1, 3]);
        assert_eq!(r.region_of_host(1), &[1, 2, 4, 7]);
        assert!(r.region_of_host(2).is_empty());
        assert_eq!(r.to_string(), "0,5,6/1,2,4,7/3");
        assert_eq!(r.check(8), Ok(()));
    }

    #[test]
    fn regions_must_cover_every_worker_process_once() {
        let r = |s: &str| s.parse::<TrackerRegions>().unwrap();
        let err = |s: &str, n| r(s).check(n).unwrap_err();
        assert!(err("0,1/2", 4).contains("process 3 is in no region"));
        assert!(err("0,1/1,2", 3).contains("process 1 is in two regions"));
        assert!(err("0,1/2,3", 3).contains("process 3 is not a worker process (the job has 3)"));
        for bad in ["0,,1", "0/", "a", "0;1", ""] {
            let e = bad.parse::<TrackerRegions>().unwrap_err();
            assert!(e.contains("expected process numbers"), "{bad}: {e}");
        }
    }
}
