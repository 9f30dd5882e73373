//! The deployment files (Dockerfile, deploy/k8s/) as far as they can be checked without a
//! cluster: the job file the ConfigMap holds runs. (kubeconform validates the manifests in CI:
//! scripts/validate-k8s.sh; crates/cli/tests/netns.rs runs the pods' start-up on namespaces.)

mod common;

/// The job file in the Kubernetes ConfigMap (deploy/k8s/configmap.yaml) is one the binary
/// takes: run with the pod-only paths overridden on the command line, it runs the flights job
/// to the end (every key known, every value of its kind).
#[test]
fn the_kubernetes_job_file_runs() {
    let Some(input) = common::flights_csv() else {
        return;
    };
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let map = std::fs::read_to_string(root.join("deploy/k8s/configmap.yaml")).unwrap();
    let body = map.split("job.toml: |\n").nth(1).expect("a job.toml entry");
    let toml: String = (body.lines())
        .take_while(|l| l.starts_with("    ") || l.is_empty())
        .map(|l| format!("{}\n", l.strip_prefix("    ").unwrap_or(l)))
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let job = dir.path().join("job.toml");
    std::fs::write(&job, toml).unwrap();
    let o = std::process::Command::new(common::bin())
        .args(["run", "--config"])
        .arg(&job)
        .arg("--input")
        .arg(&input)
        .arg("--output")
        .arg(dir.path().join("out.csv"))
        .arg("--summary")
        .arg(dir.path().join("summary.json"))
        .arg("--checkpoint-dir")
        .arg(dir.path().join("ck"))
        .args(["--metrics-addr", "127.0.0.1:0"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(common::rows_of(&dir.path().join("out.csv")).len(), 19_486);
}
