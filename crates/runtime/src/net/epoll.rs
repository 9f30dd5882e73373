//! The `epoll` a worker waits in when it reads its own connections (`worker_reads.rs`), and the
//! eventfd that wakes it ([`EventFd`], used by `wake.rs`).
//!
//! Why our own and not mio's `Poll`: a worker's park also waits for a source's next due element,
//! so its timeout must be precise to microseconds. mio waits with `epoll_wait`, whose timeout is
//! whole milliseconds (rounded up): with it, every element of a 1,000 elements/s source came up
//! to 1 ms late (element latency p50 591 us against 122 us parked as a thread). This waits with
//! `epoll_pwait2` (nanoseconds, Linux 5.11), and falls back to `epoll_wait` where the kernel
//! lacks it.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::Duration;

/// Most events one wait returns.
pub const MAX_EVENTS: usize = 32;

/// An `epoll` instance.
pub struct Epoll {
    fd: OwnedFd,
    /// `epoll_pwait2` answered `ENOSYS` once: use `epoll_wait`.
    no_pwait2: bool,
    events: [libc::epoll_event; MAX_EVENTS],
}

/// `r` as a result: `Err` with `errno` when negative.
fn check(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

impl Epoll {
    /// A new, empty instance.
    ///
    /// # Errors
    /// `epoll_create1` failed (out of file descriptors).
    pub fn new() -> io::Result<Self> {
        // SAFETY: no pointers; the descriptor returned is owned by nobody else.
        let fd = check(unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) })?;
        Ok(Epoll {
            // SAFETY: `fd` is a fresh descriptor we own.
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
            no_pwait2: false,
            events: [libc::epoll_event { events: 0, u64: 0 }; MAX_EVENTS],
        })
    }

    /// Waits on `fd` becoming readable (or closed), reported as `token`; edge-triggered with
    /// `edge` (the owner then reads until `WouldBlock`).
    ///
    /// # Errors
    /// `epoll_ctl` failed.
    pub fn add(&self, fd: RawFd, token: u64, edge: bool) -> io::Result<()> {
        let mut flags = libc::EPOLLIN | libc::EPOLLRDHUP;
        if edge {
            flags |= libc::EPOLLET;
        }
        let mut ev = libc::epoll_event {
            events: flags as u32,
            u64: token,
        };
        // SAFETY: `ev` lives across the call.
        check(unsafe { libc::epoll_ctl(self.fd.as_raw_fd(), libc::EPOLL_CTL_ADD, fd, &mut ev) })
            .map(drop)
    }

    /// Stops waiting on `fd`.
    ///
    /// # Errors
    /// `epoll_ctl` failed (`fd` was not added).
    pub fn delete(&self, fd: RawFd) -> io::Result<()> {
        let mut ev = libc::epoll_event { events: 0, u64: 0 };
        // SAFETY: as in `add`.
        check(unsafe { libc::epoll_ctl(self.fd.as_raw_fd(), libc::EPOLL_CTL_DEL, fd, &mut ev) })
            .map(drop)
    }

    /// Waits up to `timeout` (not at all when zero) for an added descriptor; returns the tokens
    /// of those that are ready. An interrupted wait returns none.
    ///
    /// # Errors
    /// The wait failed otherwise.
    pub fn wait(&mut self, timeout: Duration) -> io::Result<impl Iterator<Item = u64> + '_> {
        let n = match self.wait_raw(timeout) {
            Ok(n) => n as usize,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => 0,
            Err(e) => return Err(e),
        };
        // Copied out: the struct is packed on x86_64.
        Ok(self.events[..n].iter().map(|e| e.u64))
    }

    fn wait_raw(&mut self, timeout: Duration) -> io::Result<libc::c_int> {
        let (fd, events, max) = (
            self.fd.as_raw_fd(),
            self.events.as_mut_ptr(),
            MAX_EVENTS as libc::c_int,
        );
        if !self.no_pwait2 {
            let ts = libc::timespec {
                tv_sec: timeout.as_secs() as libc::time_t,
                tv_nsec: timeout.subsec_nanos() as libc::c_long,
            };
            // SAFETY: `events` has room for `max` entries; `ts` lives across the call.
            let r = check(unsafe { libc::epoll_pwait2(fd, events, max, &ts, std::ptr::null()) });
            match r {
                Err(e) if e.raw_os_error() == Some(libc::ENOSYS) => self.no_pwait2 = true,
                r => return r,
            }
        }
        // Whole milliseconds, rounded up so a short timeout still waits.
        let ms = timeout.as_nanos().div_ceil(1_000_000).min(i32::MAX as u128) as libc::c_int;
        // SAFETY: as above.
        check(unsafe { libc::epoll_wait(fd, events, max, ms) })
    }
}

/// An eventfd: written to wake whoever waits on it in an [`Epoll`].
pub struct EventFd(OwnedFd);

impl EventFd {
    /// A new, non-blocking eventfd.
    ///
    /// # Errors
    /// `eventfd` failed (out of file descriptors).
    pub fn new() -> io::Result<Self> {
        // SAFETY: no pointers; the descriptor returned is ours.
        let fd = check(unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) })?;
        // SAFETY: `fd` is a fresh descriptor we own.
        Ok(EventFd(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    /// Makes it readable. A full counter (never, at one write per wake) leaves it readable too.
    pub fn wake(&self) {
        let one = 1u64.to_ne_bytes();
        // SAFETY: writes 8 bytes from a live buffer.
        let _ = unsafe { libc::write(self.0.as_raw_fd(), one.as_ptr().cast(), 8) };
    }

    /// Makes it unreadable again (reads the counter).
    pub fn drain(&self) {
        let mut buf = [0u8; 8];
        // SAFETY: reads at most 8 bytes into a live buffer; non-blocking.
        let _ = unsafe { libc::read(self.0.as_raw_fd(), buf.as_mut_ptr().cast(), 8) };
    }

    /// The descriptor, to add to an [`Epoll`].
    pub fn raw(&self) -> RawFd {
        self.0.as_raw_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::time::Instant;

    /// The timeout is kept to the microsecond: never early, and well under the whole
    /// millisecond `epoll_wait` would round 300 us up to.
    #[test]
    fn a_wait_ends_at_its_timeout_not_at_the_next_millisecond() {
        let mut ep = Epoll::new().unwrap();
        let mut took: Vec<Duration> = (0..21)
            .map(|_| {
                let t = Instant::now();
                assert_eq!(ep.wait(Duration::from_micros(300)).unwrap().count(), 0);
                t.elapsed()
            })
            .collect();
        took.sort();
        assert!(took[0] >= Duration::from_micros(300), "early: {took:?}");
        assert!(
            took[10] < Duration::from_micros(900),
            "rounded up: {took:?}"
        );
    }

    #[test]
    fn an_eventfd_wakes_a_wait_once_until_written_again() {
        let mut ep = Epoll::new().unwrap();
        let fd = std::sync::Arc::new(EventFd::new().unwrap());
        ep.add(fd.raw(), 7, false).unwrap();
        let writer = fd.clone();
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            writer.wake();
        });
        let woke: Vec<u64> = ep.wait(Duration::from_secs(10)).unwrap().collect();
        t.join().unwrap();
        assert_eq!(woke, [7]);
        // Level-triggered: readable until drained.
        assert_eq!(ep.wait(Duration::ZERO).unwrap().count(), 1);
        fd.drain();
        assert_eq!(ep.wait(Duration::ZERO).unwrap().count(), 0);
    }

    /// Edge-triggered sockets report new bytes once (the reader must read to `WouldBlock`),
    /// and a closed peer as readable.
    #[test]
    fn a_socket_reports_each_arrival_once_and_its_close() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let mut tx = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (rx, _) = l.accept().unwrap();
        let mut ep = Epoll::new().unwrap();
        ep.add(rx.as_raw_fd(), 3, true).unwrap();
        assert_eq!(ep.wait(Duration::from_millis(10)).unwrap().count(), 0);
        tx.write_all(b"x").unwrap();
        assert_eq!(
            ep.wait(Duration::from_secs(10))
                .unwrap()
                .collect::<Vec<_>>(),
            [3]
        );
        assert_eq!(
            ep.wait(Duration::ZERO).unwrap().count(),
            0,
            "one edge, one event"
        );
        drop(tx);
        assert_eq!(
            ep.wait(Duration::from_secs(10))
                .unwrap()
                .collect::<Vec<_>>(),
            [3]
        );
        ep.delete(rx.as_raw_fd()).unwrap();
        assert!(ep.delete(rx.as_raw_fd()).is_err(), "deleted twice");
    }
}
