//! A Linux TUN device: the file descriptor through which [`super::router`] reads the IP packets
//! a network namespace sends and writes the ones it receives (`Documentation/networking/tuntap`
//! in the kernel tree).
//!
//! The device is created in the calling process's namespace and can then be moved into another
//! (`ip link set DEV netns NS`); the descriptor keeps working, which is what lets one process
//! route between namespaces. The device disappears when the descriptor is closed.

use std::ffi::CString;
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::AsRawFd;

const TUNSETIFF: libc::c_ulong = 0x4004_54ca;
const IFF_TUN: libc::c_short = 0x0001;
const IFF_NO_PI: libc::c_short = 0x1000;

/// `struct ifreq` as TUNSETIFF reads it: the name, then the flags (the rest of the union unused).
#[repr(C)]
struct IfReq {
    name: [libc::c_char; libc::IFNAMSIZ],
    flags: libc::c_short,
    _pad: [u8; 22],
}

/// An open TUN device (layer 3, no packet information header: each read or write is one IP
/// packet).
#[derive(Debug)]
pub struct TunDevice {
    file: File,
    name: String,
}

impl TunDevice {
    /// Creates device `name` (at most 15 bytes).
    ///
    /// # Errors
    /// No `/dev/net/tun`, no permission (`CAP_NET_ADMIN`), a name too long or already taken.
    pub fn create(name: &str) -> io::Result<Self> {
        let c = CString::new(name).map_err(|_| io::Error::other("a NUL in the device name"))?;
        let bytes = c.as_bytes_with_nul();
        if bytes.len() > libc::IFNAMSIZ {
            return Err(io::Error::other(format!(
                "device name '{name}' is longer than {} bytes",
                libc::IFNAMSIZ - 1
            )));
        }
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open("/dev/net/tun")
            .map_err(|e| io::Error::new(e.kind(), format!("/dev/net/tun: {e}")))?;
        let mut req = IfReq {
            name: [0; libc::IFNAMSIZ],
            flags: IFF_TUN | IFF_NO_PI,
            _pad: [0; 22],
        };
        for (d, &s) in req.name.iter_mut().zip(bytes) {
            *d = s as libc::c_char;
        }
        // SAFETY: TUNSETIFF reads and writes one `struct ifreq`, which `req` is laid out as and
        // outlives the call; the descriptor is open.
        let rc = unsafe { libc::ioctl(file.as_raw_fd(), TUNSETIFF, &mut req as *mut IfReq) };
        if rc < 0 {
            let e = io::Error::last_os_error();
            return Err(io::Error::new(e.kind(), format!("TUNSETIFF {name}: {e}")));
        }
        Ok(TunDevice {
            file,
            name: name.to_string(),
        })
    }

    /// The device's file descriptor (for `poll`).
    pub fn as_raw_fd(&self) -> std::os::fd::RawFd {
        self.file.as_raw_fd()
    }

    /// The device's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Another handle on the same device (for a second thread).
    ///
    /// # Errors
    /// Out of file descriptors.
    pub fn try_clone(&self) -> io::Result<Self> {
        Ok(TunDevice {
            file: self.file.try_clone()?,
            name: self.name.clone(),
        })
    }

    /// Reads one packet into `buf`, blocking until there is one; its length.
    ///
    /// # Errors
    /// The device is gone.
    pub fn recv(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.file.read(buf)
    }

    /// Writes one packet (the namespace receives it).
    ///
    /// # Errors
    /// The device is gone or down, or the packet is malformed.
    pub fn send(&mut self, packet: &[u8]) -> io::Result<()> {
        self.file.write(packet).map(|_| ())
    }
}
