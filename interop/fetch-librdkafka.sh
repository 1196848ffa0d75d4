#!/usr/bin/env bash
# Build librdkafka's own test runner (librdkafka/tests/test-runner) for the tests that run
# its transactional suite against kt (tests/oracle/test_librdkafka_suite.py).
#
# librdkafka's sources, tests included, come from crates.io (the rdkafka-sys crate ships
# them whole, and crates.io is a registry this project may reach), checked against a
# pinned SHA-256. They are unpacked and built in $KT_LIBRDKAFKA_HOME, by default
# ~/.cache/kt/librdkafka-<version>; nothing lands in the repository. A second run with the
# runner already built with the same options does nothing. With OpenSSL (Debian's
# libssl-dev: TLS and SCRAM for the security tests; SASL PLAIN, SCRAM and OAUTHBEARER are
# librdkafka's own), without Cyrus SASL (GSSAPI), zstd and curl, which no test here needs.
set -euo pipefail
crate="rdkafka-sys-4.10.0+2.12.1"
version="2.12.1"
sha256="e234cf318915c1059d4921ef7f75616b5219b10b46e9f3a511a15eb4b56a3f77"
options="--enable-ssl --disable-gssapi --disable-zstd --disable-lz4-ext --disable-curl --disable-regex-ext"
dest="${KT_LIBRDKAFKA_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/kt/librdkafka-$version}"
runner="$dest/librdkafka/tests/test-runner"
if [ -x "$runner" ] && [ "$(cat "$dest/configure-options" 2>/dev/null)" = "$options" ]; then
    echo "librdkafka $version: $runner"
    exit 0
fi
rm -rf "$dest"
mkdir -p "$dest"
curl -fsSL --retry 3 -o "$dest/crate.tar.gz" "https://static.crates.io/crates/rdkafka-sys/$crate.crate"
echo "$sha256  $dest/crate.tar.gz" | sha256sum -c --quiet -
tar -xzf "$dest/crate.tar.gz" -C "$dest" --strip-components=1 "$crate/librdkafka"
rm "$dest/crate.tar.gz"
cd "$dest/librdkafka"
# shellcheck disable=SC2086  # the options are words
./configure $options > "$dest/build.log" 2>&1
make -j"$(nproc)" libs >> "$dest/build.log" 2>&1
make -C tests -j"$(nproc)" build >> "$dest/build.log" 2>&1
echo "$options" > "$dest/configure-options"
echo "librdkafka $version: $runner"
