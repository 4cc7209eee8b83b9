#!/usr/bin/env bash
# scripts/bisect-drift.sh finds the commit that introduces drift: a throw-away git history whose
# "build" is a wrapper around the real vtrace replaying on the backend a file names. Commits:
# c1-c3 cpu (good), c4 does not build (the first commit bisect tries: skipped), c5 cpu (good), c6
# cpu-splitk (the culprit: a long reduction drifts there), c7 cpu-splitk. The bisect must name c6
# and must have skipped c4. (A skipped commit right before the culprit would leave git unable to
# choose between the two, as git then says.)
# Usage: bisect_test.sh VTRACE REPO_ROOT. Exits 77 (skipped) without git.
set -eu
vtrace=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
root=$(cd "$2" && pwd)
command -v git >/dev/null || { echo "git is not installed: skipped"; exit 77; }
work=$(mktemp -d "${TMPDIR:-/tmp}/vtrace-bisect.XXXXXX")
trap 'rm -rf "$work"' EXIT
"$vtrace" --quiet record --workload decode --hidden 48 --ffn 1024 --layers 2 --participants 2 \
  --steps 2 -o "$work/long.vtrace"
mkdir "$work/repo"
cd "$work/repo"
git init -q
git config user.email bisect@example.invalid
git config user.name bisect
cat > fake-vtrace <<WRAP
#!/usr/bin/env bash
# The "built" vtrace of this toy history: the real one, on the backend this commit names.
args=()
while [ \$# -gt 0 ]; do
  if [ "\$1" = --runtime ]; then shift 2; continue; fi
  args+=("\$1"); shift
done
exec "$vtrace" "\${args[@]}" --runtime "\$(cat backend)"
WRAP
chmod +x fake-vtrace
commit() { echo "$1" > backend; echo "$2" >> history; git add -A; git commit -qm "$2"; git rev-parse HEAD; }
c1=$(commit cpu "c1: cpu")
c2=$(commit cpu "c2: cpu, a comment")
c3=$(commit cpu "c3: cpu, another")
c4=$(commit broken "c4: does not build")
c5=$(commit cpu "c5: builds again")
c6=$(commit cpu-splitk "c6: split-k reduction")
c7=$(commit cpu-splitk "c7: after it")
export VTRACE_BISECT_BUILD='test "$(cat backend)" != broken'
export VTRACE_BISECT_VTRACE=./fake-vtrace
git bisect start "$c7" "$c1" >/dev/null
out=$(git bisect run "$root/scripts/bisect-drift.sh" "$work/long.vtrace" cpu 2>&1) || true
echo "$out"
git bisect reset >/dev/null 2>&1
echo "$out" | grep -q "$c6 is the first bad commit" || { echo "FAILED: c6 ($c6) not named"; exit 1; }
echo "$out" | grep -q "does not build: skipped" || { echo "FAILED: the broken commit was not skipped"; exit 1; }
echo "bisect named c6, skipping the commit that does not build"
