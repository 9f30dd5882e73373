//! Reading files back: damaged files give errors naming the file and offset (never a panic),
//! and two channels join into per-hop durations with error bounds.

use std::path::{Path, PathBuf};

use xorflow_measure::log::{
    hop_durations, read_dir, read_file, ret_durations, summarize, HopDuration, LogConfig, Logs,
    MAGIC,
};

/// Complete files of 3 000 records each: buffered (zstd), id (raw) and ret (3 words); returns
/// their paths.
fn sample_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for spec in ["buffered", "id", "ret"] {
        let d = dir.join(spec);
        let logs = Logs::new(LogConfig::parse(spec).unwrap().with_dir(&d), 0);
        let mut ch = logs.open("op").unwrap();
        for id in 0..3000 {
            ch.log_at(id, 7 * id);
            ch.ret_start(id);
            ch.ret_end(id);
        }
        ch.close().unwrap();
        out.push(d.join("op.p0.i0.xflog"));
    }
    out
}

#[test]
fn every_truncation_is_an_error_with_the_path_and_no_panic() {
    let dir = tempfile::tempdir().unwrap();
    for path in sample_files(dir.path()) {
        let bytes = std::fs::read(&path).unwrap();
        assert!(read_file(&path).is_ok());
        let cut = dir.path().join("cut.xflog");
        // Every cut inside the header and the frame headers, and a stride through the bodies.
        let lens: Vec<usize> = (0..200.min(bytes.len()))
            .chain((200..bytes.len()).step_by(97))
            .chain([bytes.len() - 1])
            .collect();
        for len in lens {
            std::fs::write(&cut, &bytes[..len]).unwrap();
            let e = read_file(&cut).expect_err(&format!("cut at {len} accepted"));
            assert_eq!(e.path, cut);
            assert!(
                e.offset <= len as u64,
                "offset {} past the cut {len}",
                e.offset
            );
            assert!(e.to_string().contains("cut.xflog"), "{e}");
        }
    }
}

#[test]
fn wrong_magic_version_and_flipped_bytes_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let path = sample_files(dir.path()).remove(0);
    let bytes = std::fs::read(&path).unwrap();
    let bad = dir.path().join("bad.xflog");

    let mut b = bytes.clone();
    b[0] = b'Y';
    std::fs::write(&bad, &b).unwrap();
    let e = read_file(&bad).unwrap_err();
    assert!(e.what.contains("wrong magic"), "{e}");
    assert_eq!(e.offset, 0);

    let mut b = bytes.clone();
    b[MAGIC.len()] = 9; // version
    std::fs::write(&bad, &b).unwrap();
    assert!(read_file(&bad).unwrap_err().what.contains("version 9"));

    // Every single flipped byte past the magic is caught (checksums, lengths, codecs).
    for at in MAGIC.len() + 2..bytes.len() {
        let mut b = bytes.clone();
        b[at] ^= 0x40;
        std::fs::write(&bad, &b).unwrap();
        assert!(read_file(&bad).is_err(), "flip at {at} accepted");
    }

    let mut b = bytes.clone();
    b.push(0);
    std::fs::write(&bad, &b).unwrap();
    assert!(read_file(&bad)
        .unwrap_err()
        .what
        .contains("after the trailer"));

    std::fs::write(&bad, b"").unwrap();
    assert!(read_file(&bad).unwrap_err().what.contains("magic"));
    let e = read_file(&dir.path().join("absent.xflog")).unwrap_err();
    assert!(e.what.contains("cannot read"), "{e}");
}

#[test]
fn a_bad_file_in_a_directory_fails_the_read_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = sample_files(dir.path()).remove(0);
    let d = path.parent().unwrap();
    std::fs::write(d.join("zz.xflog"), b"XFLOG\0\r\n").unwrap();
    let e = read_dir(d).unwrap_err();
    assert!(e.path.ends_with("zz.xflog"), "{e}");
}

/// Process 0 is the reference; process 1's ticks are ns + 1 000 000, known within 50 ns.
fn conv(process: u32, ticks: u64) -> (f64, f64) {
    match process {
        0 => (ticks as f64, 0.0),
        _ => (ticks as f64 - 1_000_000.0, 50.0),
    }
}

#[test]
fn two_channels_join_into_per_hop_durations_with_error_bounds() {
    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig::parse("*=xoy:1/2").unwrap().with_dir(dir.path());
    let mut src = Logs::new(config.clone(), 0).open("source").unwrap();
    let mut sink = Logs::new(config, 1).open("sink").unwrap();
    for id in 0..100u64 {
        src.log_at(id, 10_000 + id * 100);
    }
    // The sink sees ids 10..110 (the last 10 never left the source; 100..110 are unknown to
    // it), each 500 + id ns after the source, in its own clock (+1 ms).
    for id in 10..110u64 {
        sink.log_at(id, 1_000_000 + 10_000 + id * 100 + 500 + id);
    }
    src.close().unwrap();
    sink.close().unwrap();
    let files = read_dir(dir.path()).unwrap().files;
    let hops = hop_durations(&files, "source", "sink", &conv);
    let want: Vec<HopDuration> = (10..100u64)
        .filter(|id| id % 2 == 0)
        .map(|id| HopDuration {
            id,
            from_process: 0,
            to_process: 1,
            duration_ns: (500 + id) as f64,
            error_ns: 50.0,
        })
        .collect();
    assert_eq!(hops.durations, want);
    assert_eq!(hops.unmatched_from, 5, "ids 0, 2, 4, 6, 8");
    assert_eq!(hops.unmatched_to, 5, "ids 100..110, even");
    assert_eq!(hops.duplicates, 0);

    let s = summarize(&hops.durations).unwrap();
    assert_eq!(s.count, 45);
    assert_eq!(s.min_ns, 510.0);
    assert_eq!(s.max_ns, 598.0);
    // Nearest rank: the 23rd of 45 sorted (510, 512, ...), the 41st, the 45th.
    assert_eq!(s.p50_ns, 554.0);
    assert_eq!(s.p90_ns, 590.0);
    assert_eq!(s.p99_ns, 598.0);
    assert_eq!(s.max_error_ns, 50.0);
    assert!(summarize(&[]).is_none());
}

#[test]
fn ret_durations_take_the_round_trip_as_the_error_bound() {
    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig::parse("ret").unwrap().with_dir(dir.path());
    let mut ch = Logs::new(config, 0).open("ysb.ret").unwrap();
    ch.ret_start(1);
    ch.ret_start(2);
    ch.ret_start(3);
    ch.ret_end(1); // no round trip logged yet: bound = the duration itself
    ch.ret_rtt(9, 40); // a periodic measurement: applies to later ends
    ch.ret_end(2);
    ch.ret_end(3);
    ch.ret_rtt(3, 70); // its own: preferred
    ch.ret_end(4); // never started
    ch.close().unwrap();
    let files = read_dir(dir.path()).unwrap().files;
    let hops = ret_durations(&files, "ysb.ret", &conv);
    assert_eq!(hops.durations.len(), 3);
    assert_eq!(hops.unmatched_to, 1);
    let d = &hops.durations;
    assert!(d.iter().all(|h| h.duration_ns >= 0.0));
    assert_eq!(d[0].error_ns, d[0].duration_ns);
    assert_eq!(d[1].error_ns, 40.0);
    assert_eq!(d[2].error_ns, 70.0);
}
