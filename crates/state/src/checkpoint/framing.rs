//! How every checkpoint file is framed: a magic line naming its kind, the payload's length, the
//! payload, and a CRC-32 of the payload. A file that was truncated, extended or changed in any
//! byte fails [`unframe`] with a message saying which check failed.

/// Bytes of the header (magic + length) and trailer (checksum).
const MAGIC_LEN: usize = 8;

/// Frames `payload` as a file of kind `magic` (8 bytes, e.g. `b"XFSNAP2\n"`).
pub(crate) fn frame(magic: &[u8; MAGIC_LEN], payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(MAGIC_LEN + 8 + payload.len() + 4);
    out.extend_from_slice(magic);
    out.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    out.extend_from_slice(payload);
    out.extend_from_slice(&crc32fast::hash(payload).to_le_bytes());
    out
}

/// The payload of a file framed by [`frame`] with `magic`.
///
/// # Errors
/// What is wrong: another kind of file, a length that does not match the file's size, or a
/// checksum mismatch.
pub(crate) fn unframe<'a>(magic: &[u8; MAGIC_LEN], bytes: &'a [u8]) -> Result<&'a [u8], String> {
    let kind = String::from_utf8_lossy(magic).trim().to_string();
    if bytes.len() < MAGIC_LEN + 8 + 4 {
        return Err(format!(
            "{} bytes is too short for a {kind} file (truncated?)",
            bytes.len()
        ));
    }
    if &bytes[..MAGIC_LEN] != magic {
        // The magic's last characters before the newline are its format version.
        let found = String::from_utf8_lossy(&bytes[..MAGIC_LEN])
            .trim()
            .to_string();
        if bytes[..5] == magic[..5] {
            return Err(format!(
                "a {found} file, another format version than this xorflow's {kind}: written \
                 by another xorflow release"
            ));
        }
        return Err(format!("not a {kind} file (wrong magic bytes)"));
    }
    let len = u64::from_le_bytes(bytes[MAGIC_LEN..MAGIC_LEN + 8].try_into().expect("8 bytes"));
    let expected = (MAGIC_LEN as u64 + 8 + 4).saturating_add(len);
    if expected != bytes.len() as u64 {
        return Err(format!(
            "its header says {expected} bytes, the file has {} (truncated or appended to)",
            bytes.len()
        ));
    }
    let payload = &bytes[MAGIC_LEN + 8..bytes.len() - 4];
    let stored = u32::from_le_bytes(bytes[bytes.len() - 4..].try_into().expect("4 bytes"));
    let actual = crc32fast::hash(payload);
    if stored != actual {
        return Err(format!(
            "checksum mismatch (stored {stored:08x}, content {actual:08x})"
        ));
    }
    Ok(payload)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_damage_is_detected() {
        let m = b"XFTEST1\n";
        let f = frame(m, b"hello, state");
        assert_eq!(unframe(m, &f).unwrap(), b"hello, state");
        for cut in 0..f.len() {
            assert!(unframe(m, &f[..cut]).is_err(), "truncated to {cut}");
        }
        for i in 0..f.len() {
            let mut g = f.clone();
            g[i] ^= 0x10;
            assert!(unframe(m, &g).is_err(), "byte {i} flipped");
        }
        let mut longer = f.clone();
        longer.push(0);
        assert!(unframe(m, &longer).unwrap_err().contains("appended"));
        let older = frame(b"XFTEST0\n", b"hello, state");
        let e = unframe(m, &older).unwrap_err();
        assert!(
            e.contains("XFTEST0") && e.contains("another format version"),
            "{e}"
        );
        assert!(unframe(m, &frame(b"XFOTHER\n", b"x"))
            .unwrap_err()
            .contains("not a XFTEST1"));
        assert!(unframe(b"XFOTHER\n", &f)
            .unwrap_err()
            .contains("not a XFOTHER file"));
    }
}
