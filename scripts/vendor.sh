#!/usr/bin/env bash
# Refresh the vendored front-end libraries from the npm registry (pinned versions).
set -euo pipefail
HTMX=2.0.11
UPLOT=1.6.32
SWAGGER_UI=5.35.0
dest="$(cd "$(dirname "$0")/.." && pwd)/deeprepo_web/static/vendor"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
npm pack --silent "htmx.org@$HTMX" "uplot@$UPLOT" "swagger-ui-dist@$SWAGGER_UI" >/dev/null
tar -xzf "htmx.org-$HTMX.tgz" && cp package/dist/htmx.min.js "$dest/htmx-$HTMX.min.js" && rm -rf package
tar -xzf "uplot-$UPLOT.tgz" && cp package/dist/uPlot.iife.min.js "$dest/uplot-$UPLOT.min.js" \
  && cp package/dist/uPlot.min.css "$dest/uplot-$UPLOT.min.css" && rm -rf package
# Swagger UI for /api/docs; its source-map comments go (the maps are not vendored).
tar -xzf "swagger-ui-dist-$SWAGGER_UI.tgz" \
  && sed '$ s|//# sourceMappingURL=.*$||' package/swagger-ui-bundle.js > "$dest/swagger-ui-$SWAGGER_UI.bundle.js" \
  && sed '$ s|/\*# sourceMappingURL=.*\*/||' package/swagger-ui.css > "$dest/swagger-ui-$SWAGGER_UI.css" && rm -rf package
ls -la "$dest"
