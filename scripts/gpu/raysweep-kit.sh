#!/bin/bash
# Builds the kit that scripts/gpu/raysweep.sh needs on the GPU host, which has Python 3.12, torch and
# Triton but no Ray and no Z3: .carry/kit/site312.tar.xz (Ray 2.60 and the four packages it needs that the
# host lacks, as cp312 wheels unpacked; Ray's Java jar, dashboard bundle and ML libraries left out to fit
# the device's 64 MiB carry) and .carry/kit/debs/ (the Debian packages of the C++ core's libraries, unpacked
# there with dpkg -x into a private prefix, not into /). Usage: bash scripts/gpu/raysweep-kit.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
KIT=.carry/kit; W=$(mktemp -d /tmp/dirigo-kit.XXXXXX)
mkdir -p "$KIT/debs" "$W/whl" "$W/site"
grep -qx '/.carry/' .git/info/exclude 2>/dev/null || echo '/.carry/' >> .git/info/exclude
python3 -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: --python-version 3.12 \
  --implementation cp --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 -d "$W/whl" \
  ray==2.60.0 jsonschema==4.23.0 jsonschema-specifications==2024.10.1 referencing==0.35.1 rpds-py==0.22.3
for w in "$W"/whl/*.whl; do (cd "$W/site" && python3 -m zipfile -e "$w" .); done
rm -rf "$W"/site/ray/{jars,dashboard/client/build,rllib,serve,llm,data,tune,train}
tar cJf "$KIT/site312.tar.xz" -C "$W/site" .
(cd "$KIT/debs" && apt-get download libz3-dev libz3-4 libgmp-dev libgmpxx4ldbl libgmp10 libfmt-dev libfmt9 \
  nlohmann-json3-dev libcli11-dev libsqlite3-dev libsqlite3-0)
rm -rf "$W"; du -sh "$KIT"
