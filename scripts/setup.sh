#!/usr/bin/env bash
# Install what oncepost needs on a fresh Debian machine, and only what is missing:
# Debian's Chromium headless shell (nothing downloads a browser of its own), the PostgreSQL binaries used by
# the tests' ephemeral clusters, and the real-app lab's DokuWiki, MediaWiki, WordPress, MariaDB, PHP and
# Redmine. Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
# Chromium's headless shell: the browser oncepost picks first (src/browser/session.rs says why: about a third
# of the full browser's CPU per send, measured).
if [ ! -x /usr/lib/chromium/chromium-headless-shell ] && [ -z "${ONCEPOST_CHROMIUM:-}" ]; then
    need+=(chromium-headless-shell)
fi
# The full browser too: one test publishes with it (it draws only the tab in front, which the shell does not
# show), and the benchmarks time Playwright on it for reference.
if [ ! -x /usr/bin/chromium ]; then
    need+=(chromium)
fi
if ! command -v initdb >/dev/null 2>&1 && ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
    need+=(postgresql)
fi
if ! command -v psql >/dev/null 2>&1; then
    need+=(postgresql-client)
fi
if ! command -v python3 >/dev/null 2>&1; then
    need+=(python3 python3-venv)
elif ! python3 -c "import venv, ensurepip" >/dev/null 2>&1; then
    need+=(python3-venv)
fi
if ! command -v npm >/dev/null 2>&1; then
    need+=(nodejs npm)
fi
# The real-app lab (tests/it/lab_*.rs): Debian's DokuWiki, MediaWiki (on SQLite) and WordPress (with MariaDB),
# served by PHP's built-in server from private copies or settings (scripts/lab-dokuwiki.sh,
# scripts/lab-mediawiki.sh, scripts/lab-wordpress.sh), and Redmine. WordPress keeps its recommends: they bring its only
# theme; MediaWiki needs none of its own (they would bring a web server and a database server).
lab=()
if [ ! -f /usr/share/dokuwiki/doku.php ]; then
    lab+=(dokuwiki php-xml php-mbstring)
fi
if [ ! -f /usr/share/mediawiki/index.php ]; then
    lab+=(mediawiki php-sqlite3 php-intl)
fi
# Redmine (Rails) on SQLite, served by WEBrick from a private copy (scripts/lab-redmine.sh).
if [ ! -f /usr/share/redmine/config.ru ]; then
    lab+=(redmine redmine-sqlite ruby-webrick)
fi
if ! command -v php >/dev/null 2>&1; then
    lab+=(php-cli)
fi
if [ ! -f /usr/share/wordpress/wp-login.php ]; then
    lab+=(wordpress php-mysql)
fi
if [ ! -x /usr/sbin/mariadbd ]; then
    lab+=(mariadb-server)
fi
if command -v php >/dev/null 2>&1 && [ -f /usr/share/wordpress/wp-login.php ] && ! php -m 2>/dev/null | grep -qi '^mysqli$'; then
    lab+=(php-mysql)
fi
if ! command -v curl >/dev/null 2>&1; then
    lab+=(curl)
fi
need+=("${lab[@]}")

if [ ${#need[@]} -gt 0 ]; then
    echo "setup: installing ${need[*]}" >&2
    sudo_cmd=""
    if [ "$(id -u)" != 0 ]; then sudo_cmd="sudo"; fi
    $sudo_cmd apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${need[@]}" >/dev/null
    # The lab's packages bring Apache and a system MariaDB; on a machine without a policy-rc.d apt starts
    # them. The lab never uses a system service: stop them and keep them from starting at boot.
    if [ ${#lab[@]} -gt 0 ]; then
        for svc in apache2 mariadb; do
            if command -v systemctl >/dev/null 2>&1; then $sudo_cmd systemctl disable --now "$svc" >/dev/null 2>&1 || true; fi
            if command -v service >/dev/null 2>&1; then $sudo_cmd service "$svc" stop >/dev/null 2>&1 || true; fi
            if command -v update-rc.d >/dev/null 2>&1; then $sudo_cmd update-rc.d "$svc" disable >/dev/null 2>&1 || true; fi
        done
    fi
fi

if ! command -v cargo >/dev/null 2>&1; then
    echo "setup: cargo is missing; install a Rust toolchain (rustup) first" >&2
    exit 1
fi

# The MCP clients the tests drive (tests/it/mcp.rs), both official and both project-local: the Python SDK
# (PyPI mcp) in .venv-test and the inspector CLI (npm @modelcontextprotocol/inspector) in .npm-test.
if ! .venv-test/bin/python -c "import mcp" >/dev/null 2>&1; then
    echo "setup: installing the MCP Python SDK into .venv-test" >&2
    python3 -m venv .venv-test
    .venv-test/bin/pip install -q --disable-pip-version-check "mcp==2.3.0"
fi
if [ ! -x .npm-test/node_modules/.bin/mcp-inspector ]; then
    echo "setup: installing the MCP inspector into .npm-test" >&2
    npm install --silent --no-audit --no-fund --prefix .npm-test "@modelcontextprotocol/inspector@2.12.0" >/dev/null
fi

# Ten real editors for Fixturebook's /editors/ pages (tests/it/blocks.rs), pinned, bundled from
# fixtures/editors/*.js into .npm-editors/site/ (served from there: docs/fixture-platform.md).
editors_stale=
for f in lexical.js prosemirror.js quill.js ckeditor.js tinymce.js codemirror.js easymde.js trix.js slate.js draftjs.js; do
    if [ ! -f ".npm-editors/site/$f" ] || [ "fixtures/editors/$f" -nt ".npm-editors/site/$f" ]; then
        editors_stale=1
    fi
done
if [ -n "$editors_stale" ]; then
    echo "setup: installing and bundling the editors (ProseMirror, Lexical, Quill, CKEditor 5, TinyMCE, CodeMirror, EasyMDE, Trix, Slate, Draft.js) into .npm-editors" >&2
    npm install --silent --no-audit --no-fund --prefix .npm-editors \
        prosemirror-state@1.4.4 prosemirror-view@1.44.0 prosemirror-model@1.25.13 \
        prosemirror-schema-basic@1.2.5 prosemirror-example-setup@1.2.3 \
        lexical@0.52.0 @lexical/rich-text@0.52.0 quill@2.0.3 \
        ckeditor5@48.5.2 tinymce@8.9.2 codemirror@6.0.2 easymde@2.21.0 trix@2.1.19 \
        react@18.3.1 react-dom@18.3.1 slate@0.146.0 slate-dom@0.146.1 slate-react@0.146.1 \
        slate-history@0.115.0 draft-js@0.11.7 esbuild@0.28.2 >/dev/null
    mkdir -p .npm-editors/site
    # Draft.js reads Node's `global`: the page's is `globalThis`.
    for editor in prosemirror lexical ckeditor tinymce codemirror easymde trix slate draftjs; do
        NODE_PATH=.npm-editors/node_modules .npm-editors/node_modules/.bin/esbuild \
            "fixtures/editors/$editor.js" --bundle --minify --format=iife --log-level=warning \
            --define:global=globalThis \
            --outfile=".npm-editors/site/$editor.js"
    done
    cat .npm-editors/node_modules/quill/dist/quill.js fixtures/editors/quill.js > .npm-editors/site/quill.js
    cp .npm-editors/node_modules/ckeditor5/dist/ckeditor5.css .npm-editors/site/ckeditor.css
    cp .npm-editors/node_modules/trix/dist/trix.css .npm-editors/site/trix.css
    cp .npm-editors/node_modules/easymde/dist/easymde.min.css .npm-editors/site/easymde.css
    cp .npm-editors/node_modules/draft-js/dist/Draft.css .npm-editors/site/draftjs.css
    cp .npm-editors/node_modules/quill/dist/quill.core.css .npm-editors/site/quill.core.css
fi
