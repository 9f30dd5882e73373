#!/usr/bin/env python3
"""Writes standalone Kubernetes JSON schemas for kubeconform (scripts/validate-k8s.sh).

The schemas come from PyPI's kubernetes-validate wheel (Apache-2.0), whose files reference a
shared `/api/_definitions.json` that kubeconform cannot load; each kind's schema is written with
those definitions inlined under `$defs` and its `$id` dropped, as
OUT/<kind>[-<group>]-<version>.json (kubeconform's `{{.ResourceKind}}{{.KindSuffix}}` names).

usage: k8s-schemas.py WHEEL KUBERNETES_VERSION OUT_DIR
"""
import json
import os
import re
import sys
import zipfile


def main():
    wheel, version, out = sys.argv[1:4]
    prefix = f"kubernetes_validate/kubernetes-json-schema/v{version}-local-strict/"
    with zipfile.ZipFile(wheel) as z:
        names = [n for n in z.namelist() if n.startswith(prefix) and n.endswith(".json")]
        if not names:
            sys.exit(f"k8s-schemas: {wheel} has no schemas for Kubernetes {version}")
        load = lambda n: json.loads(z.read(n))
        defs = load(prefix + "_definitions.json")["$defs"]

        def local(o):
            if isinstance(o, dict):
                return {
                    k: re.sub(r"^/api/_definitions\.json#", "#", v)
                    if k == "$ref" and isinstance(v, str)
                    else local(v)
                    for k, v in o.items()
                }
            if isinstance(o, list):
                return [local(x) for x in o]
            return o

        defs = local(defs)
        os.makedirs(out, exist_ok=True)
        for n in names:
            base = n[len(prefix):]
            if base.startswith("_"):
                continue
            schema = local(load(n))
            schema.pop("$id", None)
            schema["$defs"] = defs
            with open(os.path.join(out, base), "w") as f:
                json.dump(schema, f)


if __name__ == "__main__":
    main()
