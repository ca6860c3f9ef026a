#!/usr/bin/env bash
# Measures the size of the strategy interface (issue #43, item 2), so that
# the numbers in ARCHITECTURE.md ("How to add a strategy") can be checked:
#   - methods declared by the strategy traits (`Strategy`, and
#     `Capabilities`/`Splitting` where they exist), and of those the ones
#     without a default, which every strategy must write;
#   - opt-ins: trait methods whose whole body is `Some(self)`, and the lines
#     they take (signature, body, closing brace, blank line);
#   - `impl` blocks of the traits, over the workspace.
# Usage: scripts/strategy-interface.sh (from anywhere in the repository).
set -euo pipefail
cd "$(git rev-parse --show-toplevel)/crates/wasmrace-explore/src"

# The `fn` lines of `pub trait NAME` in FILE, up to its closing brace.
trait_fns() {
    awk -v name="$2" '
        $0 ~ "^pub trait " name "[ <{]" { inside = 1; next }
        inside && /^}/ { inside = 0 }
        inside && /^    fn / { print }
    ' "$1"
}

total=0
required=0
for spec in strategy.rs:Strategy strategy.rs:Capabilities splitting.rs:Splitting; do
    file=${spec%%:*}
    name=${spec##*:}
    [ -f "$file" ] || continue
    fns=$(trait_fns "$file" "$name")
    n=$(printf '%s' "$fns" | grep -c . || true)
    [ "$n" -gt 0 ] || continue
    # A method without a default ends its signature with `;`.
    r=$(printf '%s\n' "$fns" | grep -c ';$' || true)
    echo "trait $name: $n methods, $r required"
    total=$((total + n))
    required=$((required + r))
done
echo "trait methods: $total ($required required)"

cd ..
optins=$(grep -rn --include=*.rs -B1 '^ *Some(self)$' src tests \
    | grep -c -- '-> Option<&\(mut \)\?dyn ' || true)
echo "Some(self) opt-ins: $optins ($((optins * 4)) lines)"
cd ../..
for name in Strategy Capabilities Splitting; do
    n=$(grep -rn --include=*.rs "^ *impl\(<[^>]*>\)\? *\(\$crate::\)\?$name for " crates \
        | grep -c . || true)
    echo "impl $name: $n"
done
