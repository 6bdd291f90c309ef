# shellcheck shell=bash
# Sourced by ci/ab-base.sh and ci/gpu-common.sh (ci/gpu-ab.sh's base=DIR and ab_base_tree).
# plain_relpath PATH: status 0 where PATH names something inside the tree it is relative to: not empty, not absolute,
# no empty, "." or ".." component, letters, digits and ._/+- alone. base_dir PATH: plain_relpath, and not .git or
# inside it (the folder of ci/ab-base.sh's base).
plain_relpath() {
    case "/$1/" in
        // | *//* | */./* | */../* | *[!A-Za-z0-9._/+-]*) return 1 ;;
    esac
    return 0
}
base_dir() {
    plain_relpath "$1" || return 1
    case "$1" in .git | .git/*) return 1 ;; esac
    return 0
}
