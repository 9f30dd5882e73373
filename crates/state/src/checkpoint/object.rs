//! Checkpoints in an object store: `--checkpoint-dir s3://bucket/prefix` (any S3-compatible
//! service), through the `object_store` crate (Apache Arrow's, Apache-2.0 or MIT; docs/state.md,
//! "Object stores"). Built with the `s3` feature only (`location.rs`: `file://` is a directory).
//!
//! S3 settings come from the environment as the AWS tools read them: `AWS_ACCESS_KEY_ID`,
//! `AWS_SECRET_ACCESS_KEY`, `AWS_DEFAULT_REGION`, `AWS_ENDPOINT` (an S3-compatible server) and
//! `AWS_ALLOW_HTTP=true` (a server without TLS). An object appears whole once its PUT succeeds,
//! which is all [`Storage::put`] needs: the manifest is written last, as on a local directory.

use super::storage::Storage;
use crate::error::StateError;
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use std::path::PathBuf;
use std::sync::Arc;

/// A prefix in an object store.
pub struct ObjectStorage {
    store: Arc<dyn ObjectStore>,
    prefix: ObjectPath,
    url: String,
    /// The store's client is async; every call blocks on this runtime (the checkpoint thread and
    /// the restore run outside any other runtime).
    rt: tokio::runtime::Runtime,
}

impl ObjectStorage {
    /// The store and prefix `url` names (`s3://bucket/prefix`, `file:///dir`), configured from
    /// the environment.
    ///
    /// # Errors
    /// The URL does not parse, names a scheme this build does not support, or the client
    /// cannot be built (the error names the URL).
    pub fn open(url: &str) -> Result<Self, StateError> {
        let err = |detail: String| StateError::Io {
            path: url.into(),
            source: std::io::Error::other(detail),
        };
        let parsed = url::Url::parse(url).map_err(|e| err(format!("not a URL: {e}")))?;
        // TLS for https endpoints; ring is the provider built here (aws-lc would compile C
        // for minutes). Installing twice is harmless.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let env = std::env::vars().map(|(k, v)| (k.to_ascii_lowercase(), v));
        let (store, prefix) = object_store::parse_url_opts(&parsed, env)
            .map_err(|e| err(format!("cannot open the object store: {e}")))?;
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| err(format!("cannot start its I/O runtime: {e}")))?;
        Ok(ObjectStorage {
            store: Arc::from(store),
            prefix,
            url: url.trim_end_matches('/').to_string(),
            rt,
        })
    }

    fn path(&self, name: &str) -> ObjectPath {
        name.split('/')
            .fold(self.prefix.clone(), |p, part| p.join(part))
    }

    fn io(&self, name: &str, e: object_store::Error) -> StateError {
        let kind = match e {
            object_store::Error::NotFound { .. } => std::io::ErrorKind::NotFound,
            _ => std::io::ErrorKind::Other,
        };
        StateError::Io {
            path: self.describe(name),
            source: std::io::Error::new(kind, e.to_string()),
        }
    }
}

impl Storage for ObjectStorage {
    fn location(&self) -> String {
        self.url.clone()
    }

    fn put(&self, name: &str, bytes: &[u8]) -> Result<(), StateError> {
        let payload = PutPayload::from(bytes.to_vec());
        self.rt
            .block_on(self.store.put(&self.path(name), payload))
            .map(|_| ())
            .map_err(|e| self.io(name, e))
    }

    fn get(&self, name: &str) -> Result<Vec<u8>, StateError> {
        self.rt
            .block_on(async {
                let r = self.store.get(&self.path(name)).await?;
                r.bytes().await
            })
            .map(|b| b.to_vec())
            .map_err(|e| self.io(name, e))
    }

    fn list(&self, prefix: &str) -> Result<Vec<String>, StateError> {
        let dir = self.path(prefix);
        let listed = self
            .rt
            .block_on(self.store.list_with_delimiter(Some(&dir)))
            .map_err(|e| self.io(prefix, e))?;
        let mut names: Vec<String> = listed
            .objects
            .iter()
            .filter_map(|o| o.location.filename())
            .filter(|n| !n.starts_with(".tmp"))
            .map(|n| format!("{prefix}/{n}"))
            .collect();
        names.sort();
        Ok(names)
    }

    fn delete(&self, name: &str) -> Result<(), StateError> {
        match self.rt.block_on(self.store.delete(&self.path(name))) {
            Err(e) if !matches!(e, object_store::Error::NotFound { .. }) => Err(self.io(name, e)),
            _ => Ok(()),
        }
    }

    fn describe(&self, name: &str) -> PathBuf {
        PathBuf::from(format!("{}/{name}", self.url))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_urls_store_list_and_delete_like_a_directory() {
        let d = tempfile::tempdir().unwrap();
        let url = format!("file://{}/ck", d.path().display());
        std::fs::create_dir_all(d.path().join("ck")).unwrap();
        let s = ObjectStorage::open(&url).unwrap();
        s.put("files/b", b"2").unwrap();
        s.put("files/a", b"1").unwrap();
        s.put("manifests/c1", b"m").unwrap();
        assert_eq!(s.list("files").unwrap(), ["files/a", "files/b"]);
        assert_eq!(s.get("files/a").unwrap(), b"1");
        s.delete("files/a").unwrap();
        s.delete("files/a").unwrap();
        assert_eq!(s.list("files").unwrap(), ["files/b"]);
        assert!(s.list("nothing").unwrap().is_empty());
        let e = s.get("files/a").unwrap_err().to_string();
        assert!(e.contains(&format!("{url}/files/a")), "{e}");
    }

    #[test]
    fn unsupported_or_malformed_urls_are_named() {
        for url in ["gs://bucket/x", "s3://"] {
            let e = ObjectStorage::open(url).err().expect("refused").to_string();
            assert!(e.contains(url), "{e}");
        }
    }
}
