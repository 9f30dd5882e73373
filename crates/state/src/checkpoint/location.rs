//! Where `--checkpoint-dir` points: a local directory (a path, or a `file://` URL), or an object
//! store (`s3://bucket/prefix`, with the `s3` feature: `object.rs`). A `file://` URL is the
//! directory it names, written by [`super::LocalDir`] like a path; so the object-store client
//! is built only where S3 is (about 10 s of CPU on a cold build on 2 cores).

use crate::error::StateError;
use std::path::{Path, PathBuf};

/// A checkpoint location.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Location {
    /// A local directory.
    Dir(PathBuf),
    /// An object store URL (`s3://` or `s3a://`).
    Object(String),
}

/// True if `location` is a URL (`scheme://...`) rather than a local path.
pub fn is_url(location: &str) -> bool {
    location.split_once("://").is_some_and(|(scheme, _)| {
        !scheme.is_empty()
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '+')
    })
}

/// The location `location` names.
///
/// # Errors
/// A `file://` URL naming another host or a relative path; an `s3://` URL in a build without
/// the `s3` feature (saying how to build one); any other scheme. Each names the location.
pub fn parse(location: &Path) -> Result<Location, StateError> {
    let Some(url) = location.to_str().filter(|l| is_url(l)) else {
        return Ok(Location::Dir(location.to_path_buf()));
    };
    let err = |why: &str| StateError::Io {
        path: url.into(),
        source: std::io::Error::other(why.to_string()),
    };
    let (scheme, rest) = url.split_once("://").expect("a URL");
    match scheme {
        // file:///abs/path (an empty host); file://localhost/abs/path.
        "file" => match rest.strip_prefix("localhost").unwrap_or(rest) {
            path if path.starts_with('/') => Ok(Location::Dir(PathBuf::from(path))),
            _ => Err(err(
                "a file:// URL names a local absolute path: file:///dir",
            )),
        },
        "s3" | "s3a" if cfg!(feature = "s3") => Ok(Location::Object(url.to_string())),
        "s3" | "s3a" => Err(err(
            "this xorflow was built without S3 support: build it with `cargo build --release \
             -p xorflow-cli --features s3`",
        )),
        other => Err(err(&format!(
            "'{other}://' is not a checkpoint location here: a directory, file:///dir or \
             s3://bucket/prefix"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_file_urls_and_object_stores_are_told_apart() {
        let p = |s: &str| parse(Path::new(s));
        assert_eq!(p("/tmp/x").unwrap(), Location::Dir("/tmp/x".into()));
        assert_eq!(
            p("relative/dir").unwrap(),
            Location::Dir("relative/dir".into())
        );
        assert_eq!(
            p("odd name://x").unwrap(),
            Location::Dir("odd name://x".into())
        );
        assert_eq!(p("file:///tmp/x").unwrap(), Location::Dir("/tmp/x".into()));
        assert_eq!(
            p("file://localhost/tmp/x").unwrap(),
            Location::Dir("/tmp/x".into())
        );
        for bad in ["file://host/x", "file://rel", "gs://bucket/x"] {
            let e = p(bad).unwrap_err().to_string();
            assert!(e.contains(bad), "{e}");
        }
        match cfg!(feature = "s3") {
            true => assert_eq!(p("s3://b/p").unwrap(), Location::Object("s3://b/p".into())),
            false => {
                let e = p("s3://b/p").unwrap_err().to_string();
                assert!(e.contains("--features s3") && e.contains("s3://b/p"), "{e}");
            }
        }
    }
}
