#!/usr/bin/env bash
# Refresh the vendored front-end libraries from the npm registry (pinned versions).
set -euo pipefail
HTMX=2.0.11
UPLOT=1.6.32
dest="$(cd "$(dirname "$0")/.." && pwd)/deeprepo_web/static/vendor"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
npm pack --silent "htmx.org@$HTMX" "uplot@$UPLOT" >/dev/null
tar -xzf "htmx.org-$HTMX.tgz" && cp package/dist/htmx.min.js "$dest/htmx-$HTMX.min.js" && rm -rf package
tar -xzf "uplot-$UPLOT.tgz" && cp package/dist/uPlot.iife.min.js "$dest/uplot-$UPLOT.min.js" \
  && cp package/dist/uPlot.min.css "$dest/uplot-$UPLOT.min.css" && rm -rf package
ls -la "$dest"
