#!/usr/bin/env bash
# What a Rust user does on day one (make sdk-rust): cargo package builds the
# crate's .crate; it is unpacked, a throwaway cargo project depends on it by
# path, and the seed's example (examples/seed.rs of the package) runs there
# as the project's main against a tenure server built from this repository.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
GO=${GO:-go}
work=$(mktemp -d)
server_pid=
cleanup() {
	if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
	rm -rf "$work"
}
trap cleanup EXIT

target=${CARGO_TARGET_DIR:-$here/target}
cd "$here"
# --allow-dirty: a working tree with changes packages them as they are.
cargo package --allow-dirty --no-verify --quiet
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
crate="$target/package/tenure-locks-$version.crate"
tar -xzf "$crate" -C "$work"
echo "sdk-rust: packaged $(basename "$crate") ($(wc -c <"$crate") bytes)"

mkdir -p "$work/app/src"
cp "$work/tenure-locks-$version/examples/seed.rs" "$work/app/src/main.rs"
cat >"$work/app/Cargo.toml" <<TOML
[package]
name = "day-one"
version = "0.1.0"
edition = "2021"
publish = false

[dependencies]
tenure-locks = { path = "../tenure-locks-$version" }
TOML
# The crate's own lock file: the versions its tests ran with.
cp "$here/Cargo.lock" "$work/app/Cargo.lock"

"$GO" build -o "$work/tenure" "$root/cmd/tenure"
"$work/tenure" --addr 127.0.0.1:0 --dir "$work/data" 2>"$work/server.log" &
server_pid=$!
addr=
for _ in $(seq 100); do
	addr=$(sed -n 's/.*ready to accept connections.* addr=\([^ ]*\).*/\1/p' "$work/server.log" | head -1)
	[ -n "$addr" ] && break
	sleep 0.1
done
[ -n "$addr" ] || { echo "sdk-rust: the server did not start" >&2; cat "$work/server.log" >&2; exit 1; }

# The crate's own build directory: the dependencies its tests built are
# reused (same versions, same features), and the package is built anew.
cd "$work/app"
CARGO_TARGET_DIR="$target" TENURE_URL="redis://$addr" cargo run --quiet
