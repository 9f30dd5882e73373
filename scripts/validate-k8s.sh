#!/usr/bin/env bash
# Validates the Kubernetes manifests (deploy/k8s/) with kubeconform, strictly (unknown fields
# are errors), against the schemas of Kubernetes $K8S_VERSION.
#
# kubeconform is built from the Go module proxy (about 40 s the first time); its schemas come
# from PyPI's kubernetes-validate wheel, made standalone by scripts/k8s-schemas.py. Both are
# cached under target/k8s/.
set -euo pipefail
cd "$(dirname "$0")/.."
K8S_VERSION=${K8S_VERSION:-1.30.0}
KUBECONFORM_VERSION=v0.8.0
KV_VERSION=1.37.0
CACHE=target/k8s
mkdir -p "$CACHE"
BIN="$CACHE/bin/kubeconform"
if [ ! -x "$BIN" ]; then
    command -v go >/dev/null || { echo "validate-k8s: Go is needed to build kubeconform" >&2; exit 1; }
    GOBIN="$PWD/$CACHE/bin" GOFLAGS=-mod=mod go install "github.com/yannh/kubeconform/cmd/kubeconform@$KUBECONFORM_VERSION"
fi
SCHEMAS="$CACHE/schemas-$K8S_VERSION"
if [ ! -f "$SCHEMAS/statefulset-apps-v1.json" ]; then
    python3 -m pip download --quiet --no-deps -d "$CACHE/wheel" "kubernetes-validate==$KV_VERSION"
    python3 scripts/k8s-schemas.py "$CACHE/wheel/kubernetes_validate-$KV_VERSION-py3-none-any.whl" \
        "$K8S_VERSION" "$SCHEMAS"
fi
"$BIN" -strict -summary -kubernetes-version "$K8S_VERSION" \
    -schema-location "$PWD/$SCHEMAS/{{.ResourceKind}}{{.KindSuffix}}.json" \
    deploy/k8s/service.yaml deploy/k8s/secret.yaml deploy/k8s/configmap.yaml \
    deploy/k8s/volume.yaml deploy/k8s/statefulset.yaml
