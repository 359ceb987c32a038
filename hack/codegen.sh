#!/usr/bin/env bash
# Regenerates the deepcopy functions and the ResourceGraphDefinition CRD
# manifest of sdk/apis/v1alpha1 with a pinned controller-gen, built from its
# own module (hack/controller-gen) so its dependencies stay out of the SDK.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin="${root}/bin"
gen="${bin}/controller-gen"
version="$(cd "${root}/hack/controller-gen" && go list -m -f '{{.Version}}' sigs.k8s.io/controller-tools)"

if [[ ! -x "${gen}" ]] || ! "${gen}" --version | grep -q "${version}"; then
	echo "building controller-gen ${version} into ${bin}" >&2
	mkdir -p "${bin}"
	(cd "${root}/hack/controller-gen" && go build -o "${gen}" sigs.k8s.io/controller-tools/cmd/controller-gen)
fi

cd "${root}"
"${gen}" object paths=./sdk/apis/...
"${gen}" crd paths=./sdk/apis/... output:crd:artifacts:config=sdk/apis/v1alpha1/crd
