//! perf record's control channel (`-D -1 --control fifo:CTL,ACK`): perf starts with sampling
//! off and turns it on and off when told, acknowledging each command, so that an attached
//! process's CPU time can be read from `/proc` exactly when sampling starts and stops (perf
//! takes a few hundred ms to attach; without this, that time counted in the CPU but not in the
//! samples).

use crate::perf::PerfError;
use std::ffi::CString;
use std::fs::File;
use std::io::{Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::Child;
use std::time::{Duration, Instant};

/// The two FIFOs, open on our side.
pub struct Control {
    ctl_path: PathBuf,
    ack_path: PathBuf,
    ctl: File,
    ack: File,
}

fn io_err(what: &str, path: &Path, e: std::io::Error) -> PerfError {
    PerfError::Failed {
        what: format!("{what} '{}'", path.display()),
        status: "not started".into(),
        stderr: e.to_string(),
        hint: String::new(),
    }
}

fn mkfifo(path: &Path) -> Result<(), PerfError> {
    let c = CString::new(path.as_os_str().as_bytes())
        .map_err(|e| io_err("creating the FIFO", path, std::io::Error::other(e)))?;
    // SAFETY: mkfifo reads the NUL-terminated path only.
    if unsafe { libc::mkfifo(c.as_ptr(), 0o600) } != 0 {
        return Err(io_err(
            "creating the FIFO",
            path,
            std::io::Error::last_os_error(),
        ));
    }
    Ok(())
}

impl Control {
    /// Makes `perf-ctl.fifo` and `perf-ack.fifo` in `dir` and opens them read-write (so that
    /// neither open waits for perf).
    ///
    /// # Errors
    /// The FIFOs cannot be made or opened.
    pub fn new(dir: &Path) -> Result<Control, PerfError> {
        let ctl_path = dir.join("perf-ctl.fifo");
        let ack_path = dir.join("perf-ack.fifo");
        mkfifo(&ctl_path)?;
        mkfifo(&ack_path)?;
        let open = |p: &Path| {
            std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .open(p)
                .map_err(|e| io_err("opening the FIFO", p, e))
        };
        Ok(Control {
            ctl: open(&ctl_path)?,
            ack: open(&ack_path)?,
            ctl_path,
            ack_path,
        })
    }

    /// perf's arguments: start with sampling off, take commands from the FIFOs.
    pub fn args(&self) -> Vec<String> {
        vec![
            "-D".into(),
            "-1".into(),
            "--control".into(),
            format!(
                "fifo:{},{}",
                self.ctl_path.display(),
                self.ack_path.display()
            ),
        ]
    }

    /// Sends `command` (`enable` or `disable`) and waits up to `timeout` for perf's ack.
    ///
    /// # Errors
    /// perf exited first, or did not answer in time.
    pub fn send(
        &mut self,
        command: &str,
        perf: &mut Child,
        timeout: Duration,
    ) -> Result<(), PerfError> {
        let failed = |stderr: String| PerfError::Failed {
            what: format!("perf record ({command} over its control FIFO)"),
            status: "no ack".into(),
            stderr,
            hint: String::new(),
        };
        self.ctl
            .write_all(format!("{command}\n").as_bytes())
            .map_err(|e| failed(e.to_string()))?;
        let deadline = Instant::now() + timeout;
        let mut got = Vec::new();
        while !String::from_utf8_lossy(&got).contains("ack") {
            if let Ok(Some(status)) = perf.try_wait() {
                return Err(failed(format!("perf exited ({status}) before answering")));
            }
            if Instant::now() >= deadline {
                return Err(failed(format!("no answer in {timeout:?}")));
            }
            let mut fd = libc::pollfd {
                fd: self.ack.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one valid pollfd, for at most 50 ms.
            if unsafe { libc::poll(&mut fd, 1, 50) } > 0 {
                let mut buf = [0u8; 64];
                let n = self.ack.read(&mut buf).map_err(|e| failed(e.to_string()))?;
                got.extend_from_slice(&buf[..n]);
            }
        }
        Ok(())
    }
}

impl Drop for Control {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.ctl_path);
        let _ = std::fs::remove_file(&self.ack_path);
    }
}
