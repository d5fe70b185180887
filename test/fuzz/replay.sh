#!/bin/sh
# Runs a fuzz target once on every file of a corpus directory (libFuzzer's replay mode); fails on
# the first crash, sanitizer report or an input running over 10 s.
set -e
target=$1
dir=$2
[ -d "$dir" ] || { echo "replay: no corpus directory $dir"; exit 1; }
files=$(find "$dir" -type f ! -name '*.md' | sort)
[ -n "$files" ] || { echo "replay: $dir is empty"; exit 1; }
# shellcheck disable=SC2086
exec "$target" -timeout=10 -rss_limit_mb=4096 $files
