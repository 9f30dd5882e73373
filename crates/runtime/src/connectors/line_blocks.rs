//! A line-per-record input (a JSON-lines file, or a folder of them) split into blocks that a
//! source's instances read while they emit, in parallel and without holding the input in
//! memory: instance `i` of `n` reads blocks `i, i + n, ...`, each in chunks through one reused
//! buffer.
//!
//! A block is a byte range of one file and owns the lines that *start* in it (as Hadoop's input
//! splits do): its reader skips the line it begins in the middle of, which the block before
//! owns, and reads on past its end to finish its last line. Blocks are dealt out in turn, not in
//! halves, so the instances move through the input's event time together: a window waits for
//! the slowest instance by about one block, not half the input.

use super::rows::{input_files, BOM};
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Bytes per read: a chunk's lines are parsed while the chunk is still in the core's cache.
const CHUNK: usize = 256 * 1024;
/// The smallest block, bytes: below it, reads and hand-overs cost more than the lines.
const MIN_BLOCK: u64 = 64 * 1024;
/// The largest block, bytes: the skew between instances, in lines, is about one block.
const MAX_BLOCK: u64 = 4 * 1024 * 1024;
/// A large input is cut into at least this many blocks per instance, so that a slow instance
/// is not left with one big block at the end.
const BLOCKS_PER_INSTANCE: u64 = 16;

/// The blocks of an input: its files (in name order, as
/// [`crate::connectors::rows::read_input`] reads a folder) cut into byte ranges.
#[derive(Debug)]
pub struct BlockPlan {
    files: Vec<PathBuf>,
    /// Each file's length when planned, bytes.
    lens: Vec<u64>,
    /// (file index, start, end): bytes `start..end` of the file.
    blocks: Vec<(usize, u64, u64)>,
}

impl BlockPlan {
    /// The blocks of `path` (a file or a folder of files) for `instances` readers: between
    /// 64 KiB and 4 MiB, at least 16 per instance when the input is large enough.
    ///
    /// # Errors
    /// A file that cannot be opened or a folder that cannot be listed or holds no files,
    /// naming it.
    pub fn of(path: &Path, instances: usize) -> Result<BlockPlan, String> {
        let files = input_files(path)?;
        let mut lens = Vec::with_capacity(files.len());
        for f in &files {
            let file = File::open(f).map_err(|e| format!("cannot read '{}': {e}", f.display()))?;
            let meta =
                (file.metadata()).map_err(|e| format!("cannot read '{}': {e}", f.display()))?;
            lens.push(meta.len());
        }
        let total: u64 = lens.iter().sum();
        let size =
            (total / (instances.max(1) as u64 * BLOCKS_PER_INSTANCE)).clamp(MIN_BLOCK, MAX_BLOCK);
        Ok(BlockPlan::cut(files, lens, size))
    }

    /// `files` of lengths `lens` cut into blocks of `size` bytes (the last of a file shorter).
    fn cut(files: Vec<PathBuf>, lens: Vec<u64>, size: u64) -> BlockPlan {
        let mut blocks = Vec::new();
        for (i, &len) in lens.iter().enumerate() {
            let mut start = 0;
            while start < len {
                let end = (start + size.max(1)).min(len);
                blocks.push((i, start, end));
                start = end;
            }
        }
        BlockPlan {
            files,
            lens,
            blocks,
        }
    }

    /// The input's files, in reading order.
    pub fn files(&self) -> &[PathBuf] {
        &self.files
    }

    /// How many blocks the input has.
    pub fn blocks(&self) -> usize {
        self.blocks.len()
    }

    /// The 1-based number of the line that starts at byte `offset` of file `file`: one more
    /// than the line ends before it. Reads the file up to there, so it is for naming the few
    /// lines a report quotes, not for every line.
    ///
    /// # Errors
    /// The file cannot be read, naming it.
    pub fn line_at(&self, file: usize, offset: u64) -> Result<u64, String> {
        let path = &self.files[file];
        let err = |e: std::io::Error| format!("cannot read '{}': {e}", path.display());
        let f = File::open(path).map_err(err)?;
        let mut buf = vec![0u8; CHUNK];
        let (mut at, mut ends) = (0u64, 0u64);
        while at < offset {
            let want = ((offset - at) as usize).min(CHUNK);
            let n = read_at(&f, &mut buf[..want], at).map_err(err)?;
            if n == 0 {
                break;
            }
            ends += memchr::memchr_iter(b'\n', &buf[..n]).count() as u64;
            at += n as u64;
        }
        Ok(ends + 1)
    }

    /// The reader of instance `instance` of `instances`: blocks `instance`, `instance +
    /// instances`, ...
    pub fn reader(self: &Arc<Self>, instance: usize, instances: usize) -> BlockReader {
        BlockReader {
            plan: self.clone(),
            instance,
            step: instances.max(1),
            block: instance,
            started: false,
            file: None,
            buf: Vec::new(),
            lo: 0,
            hi: 0,
            base: 0,
            next_read: 0,
            eof: false,
        }
    }
}

/// One line an instance read.
#[derive(Debug, PartialEq, Eq)]
pub struct Line<'a> {
    /// The file's index in [`BlockPlan::files`].
    pub file: usize,
    /// Where the line starts in the file, bytes.
    pub offset: u64,
    /// Its bytes, without the line end (`\n`, or `\r\n`) and a byte-order mark.
    pub bytes: &'a [u8],
}

/// One instance's reader of its blocks ([`BlockPlan::reader`]).
pub struct BlockReader {
    plan: Arc<BlockPlan>,
    instance: usize,
    step: usize,
    /// The block being read, or the next one to start (past the last: done).
    block: usize,
    /// Whether the block's reading has begun (its first owned line found).
    started: bool,
    file: Option<(usize, File)>,
    /// Read bytes: `buf[lo..hi]` not yet handed out; `buf[0]` is the file's byte `base`.
    buf: Vec<u8>,
    lo: usize,
    hi: usize,
    base: u64,
    /// The file offset of the next read (`base + hi`).
    next_read: u64,
    /// Whether the file has no bytes past `next_read`.
    eof: bool,
}

impl BlockReader {
    /// The next line of this instance's blocks; `None` when they are all read.
    ///
    /// # Errors
    /// A file that cannot be opened or read, naming it.
    pub fn next_line(&mut self) -> Result<Option<Line<'_>>, String> {
        loop {
            let Some(&(file, start, end)) = self.plan.blocks.get(self.block) else {
                return Ok(None);
            };
            if !self.started {
                self.enter(file, start)?;
            }
            let at = self.base + self.lo as u64;
            if at >= end {
                self.next_block();
                continue;
            }
            if let Some(k) = memchr::memchr(b'\n', &self.buf[self.lo..self.hi]) {
                let from = self.lo;
                self.lo += k + 1;
                return Ok(Some(Line {
                    file,
                    offset: at,
                    bytes: trim(&self.buf[from..from + k], at),
                }));
            }
            if self.eof {
                if self.lo == self.hi {
                    self.next_block();
                    continue;
                }
                let from = self.lo;
                self.lo = self.hi;
                return Ok(Some(Line {
                    file,
                    offset: at,
                    bytes: trim(&self.buf[from..self.hi], at),
                }));
            }
            self.fill()?;
        }
    }

    /// Where the next line is, for a checkpoint: (block, byte offset in its file). Taken back
    /// by [`BlockReader::seek`].
    pub fn position(&self) -> (usize, u64) {
        match self.plan.blocks.get(self.block) {
            Some(&(_, start, _)) if !self.started => (self.block, start),
            Some(_) => (self.block, self.base + self.lo as u64),
            None => (self.block, 0),
        }
    }

    /// Moves to a [`BlockReader::position`] this instance's reader gave over the same input.
    ///
    /// # Errors
    /// A block that is not this instance's, or an offset outside its block's file: the
    /// position is not of this input.
    pub fn seek(&mut self, block: usize, offset: u64) -> Result<(), String> {
        let blocks = self.plan.blocks.len();
        let mine = block >= self.instance && (block - self.instance).is_multiple_of(self.step);
        if !mine || block >= blocks + self.step {
            return Err(format!(
                "block {block} is not one of instance {} of {}'s ({blocks} blocks): the \
                 checkpoint is not of this input",
                self.instance, self.step
            ));
        }
        self.block = block;
        self.started = false;
        let Some(&(file, start, _)) = self.plan.blocks.get(block) else {
            return Ok(());
        };
        if offset < start || offset > self.plan.lens[file] {
            return Err(format!(
                "offset {offset} is outside block {block} of '{}': the checkpoint is not of \
                 this input",
                self.plan.files[file].display()
            ));
        }
        if offset > start {
            // A line start this reader recorded: read on from it, no alignment.
            self.open(file)?;
            self.restart_at(offset);
            self.started = true;
        }
        Ok(())
    }

    fn next_block(&mut self) {
        self.block += self.step;
        self.started = false;
    }

    fn open(&mut self, file: usize) -> Result<(), String> {
        if self.file.as_ref().is_some_and(|(f, _)| *f == file) {
            return Ok(());
        }
        let path = &self.plan.files[file];
        let f = File::open(path).map_err(|e| format!("cannot read '{}': {e}", path.display()))?;
        self.file = Some((file, f));
        Ok(())
    }

    fn restart_at(&mut self, offset: u64) {
        (self.lo, self.hi, self.base, self.next_read, self.eof) = (0, 0, offset, offset, false);
    }

    /// Starts block (`file`, `start`): at the file's first line, or after the first line end
    /// at or past byte `start - 1`.
    fn enter(&mut self, file: usize, start: u64) -> Result<(), String> {
        self.open(file)?;
        self.started = true;
        if start == 0 {
            self.restart_at(0);
            return Ok(());
        }
        self.restart_at(start - 1);
        loop {
            if let Some(k) = memchr::memchr(b'\n', &self.buf[self.lo..self.hi]) {
                self.lo += k + 1;
                return Ok(());
            }
            self.lo = self.hi;
            if self.eof {
                return Ok(());
            }
            self.fill()?;
        }
    }

    /// Reads the next chunk after the unread bytes, moving them to the buffer's front first.
    fn fill(&mut self) -> Result<(), String> {
        if self.lo > 0 {
            self.buf.copy_within(self.lo..self.hi, 0);
            self.base += self.lo as u64;
            self.hi -= self.lo;
            self.lo = 0;
        }
        if self.buf.len() < self.hi + CHUNK {
            self.buf.resize(self.hi + CHUNK, 0);
        }
        let Some((i, f)) = &self.file else {
            return Err("a block read before its file was opened".into());
        };
        let n = read_at(f, &mut self.buf[self.hi..self.hi + CHUNK], self.next_read)
            .map_err(|e| format!("cannot read '{}': {e}", self.plan.files[*i].display()))?;
        self.hi += n;
        self.next_read += n as u64;
        self.eof = n == 0;
        Ok(())
    }
}

/// A line without its `\r` before the `\n` and, the file's first (at byte `at` 0), without a
/// byte-order mark. The mark is part of the first line, so the line still starts at 0 and its
/// block is the first.
fn trim(line: &[u8], at: u64) -> &[u8] {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    match at {
        0 => line.strip_prefix(BOM).unwrap_or(line),
        _ => line,
    }
}

/// `pread`, retried when a signal interrupts it.
fn read_at(f: &File, buf: &mut [u8], at: u64) -> std::io::Result<usize> {
    loop {
        match f.read_at(buf, at) {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            r => return r,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::io::Write;

    /// Every instance's lines, with (file, offset), reading `files` in blocks of `size`.
    fn read_all(plan: &Arc<BlockPlan>, instances: usize) -> Vec<(usize, u64, Vec<u8>)> {
        let mut out = Vec::new();
        for i in 0..instances {
            let mut r = plan.reader(i, instances);
            while let Some(l) = r.next_line().unwrap() {
                out.push((l.file, l.offset, l.bytes.to_vec()));
            }
        }
        out.sort();
        out
    }

    /// The oracle: each file split at every `\n`, a last line without one kept if not empty.
    fn lines_of(contents: &[Vec<u8>]) -> Vec<(usize, u64, Vec<u8>)> {
        let mut out = Vec::new();
        for (i, c) in contents.iter().enumerate() {
            let mut at = 0;
            while at < c.len() {
                let end = c[at..]
                    .iter()
                    .position(|&b| b == b'\n')
                    .map_or(c.len(), |k| at + k);
                out.push((i, at as u64, trim(&c[at..end], at as u64).to_vec()));
                at = end + 1;
            }
        }
        out.sort();
        out
    }

    fn write(dir: &Path, contents: &[Vec<u8>]) -> Vec<PathBuf> {
        (contents.iter().enumerate())
            .map(|(i, c)| {
                let p = dir.join(format!("part-{i}.json"));
                std::fs::File::create(&p).unwrap().write_all(c).unwrap();
                p
            })
            .collect()
    }

    fn plan(files: Vec<PathBuf>, size: u64) -> Arc<BlockPlan> {
        let lens = files
            .iter()
            .map(|f| std::fs::metadata(f).unwrap().len())
            .collect();
        Arc::new(BlockPlan::cut(files, lens, size))
    }

    proptest! {
        /// Every line of every file is read exactly once, by some instance, whatever the
        /// block size, the number of instances and where the line ends fall.
        #[test]
        fn the_instances_read_every_line_once(
            contents in prop::collection::vec(
                prop::collection::vec(prop::sample::select(b"ab\n\r{}".to_vec()), 0..300), 1..4),
            bom in any::<bool>(),
            size in 1u64..80,
            instances in 1usize..5,
        ) {
            let mut contents = contents;
            if bom {
                contents[0].splice(0..0, BOM.iter().copied());
            }
            let dir = tempfile::tempdir().unwrap();
            let p = plan(write(dir.path(), &contents), size);
            prop_assert_eq!(read_all(&p, instances), lines_of(&contents));
        }

        /// A reader moved to a position it gave reads on exactly what it would have read.
        #[test]
        fn a_reader_resumes_at_its_position(
            lines in prop::collection::vec("[a-z]{0,20}", 1..200),
            size in 1u64..100,
            instances in 1usize..4,
            stop in 0usize..200,
        ) {
            let text = lines.join("\n").into_bytes();
            let dir = tempfile::tempdir().unwrap();
            let p = plan(write(dir.path(), &[text]), size);
            for i in 0..instances {
                let mut whole = Vec::new();
                let mut r = p.reader(i, instances);
                while let Some(l) = r.next_line().unwrap() {
                    whole.push(l.offset);
                }
                let mut first = p.reader(i, instances);
                let mut got = Vec::new();
                for _ in 0..stop.min(whole.len()) {
                    got.push(first.next_line().unwrap().unwrap().offset);
                }
                let (block, offset) = first.position();
                let mut second = p.reader(i, instances);
                second.seek(block, offset).unwrap();
                while let Some(l) = second.next_line().unwrap() {
                    got.push(l.offset);
                }
                prop_assert_eq!(got, whole);
            }
        }
    }

    #[test]
    fn a_foreign_position_is_refused_and_line_numbers_count_line_ends() {
        let dir = tempfile::tempdir().unwrap();
        let p = plan(write(dir.path(), &[b"a\nbb\n\nccc\n".to_vec()]), 3);
        let mut r = p.reader(1, 2);
        assert!(r.seek(0, 0).unwrap_err().contains("not of this input"));
        assert!(r.seek(1, 99).unwrap_err().contains("outside block 1"));
        assert_eq!(p.line_at(0, 0).unwrap(), 1);
        assert_eq!(p.line_at(0, 5).unwrap(), 3);
        assert_eq!(p.line_at(0, 6).unwrap(), 4);
        let big = BlockPlan::of(dir.path(), 2).unwrap();
        assert_eq!((big.blocks(), big.files().len()), (1, 1));
        assert!(BlockPlan::of(&dir.path().join("none.json"), 1)
            .unwrap_err()
            .contains("none.json"));
    }
}
