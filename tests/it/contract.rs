//! Contract format: the shipped fixture contract is valid, the hash ignores comments/layout but not
//! meaning, and every kind of mistake is reported with file:line:column and an explanation.
use std::path::Path;
use std::process::Command;

use oncepost::contract::{Contract, ContractError, Problem};

const BIN: &str = env!("CARGO_BIN_EXE_oncepost");

fn fixture_text() -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("selectors/fixture.toml"))
        .unwrap()
}

fn problems(text: &str) -> Vec<Problem> {
    match Contract::parse(text, Path::new("t.toml")) {
        Err(ContractError::Invalid { problems, .. }) => problems,
        other => panic!("expected problems, got {other:?}"),
    }
}

/// Line (1-based) of the first line containing `needle`.
fn line_of(text: &str, needle: &str) -> usize {
    text.lines()
        .position(|l| l.contains(needle))
        .expect("needle in text")
        + 1
}

#[test]
fn fixture_contract_is_valid_and_describes_the_agreed_dom() {
    let c = Contract::parse(&fixture_text(), Path::new("fixture.toml")).expect("valid");
    assert_eq!(c.platform, "fixture");
    let plan = c.probe_plan("http://127.0.0.1:8080/").unwrap();
    assert_eq!(plan.url, "http://127.0.0.1:8080/compose");
    assert_eq!(
        plan.allowed_origins,
        vec!["http://127.0.0.1:8080".to_string()]
    );
    assert_eq!(plan.fields.len(), 2);
    assert_eq!(plan.contract_hash, c.hash());
    assert_eq!(c.hash().len(), 64);
}

#[test]
fn hash_ignores_comments_order_and_layout_but_not_meaning() {
    let text = fixture_text();
    let c = Contract::parse(&text, Path::new("a")).unwrap();
    // Comments and blank lines removed, whitespace changed.
    let stripped: String = text
        .lines()
        .filter(|l| !l.trim_start().starts_with('#') && !l.trim().is_empty())
        .map(|l| format!("{}\n", l.replace(" = ", "=")))
        .collect();
    assert_eq!(
        Contract::parse(&stripped, Path::new("b")).unwrap().hash(),
        c.hash()
    );
    // Re-serialized by toml (different layout and key order), and with defaults written out explicitly.
    let reserialized = toml::to_string(&c).unwrap();
    assert_eq!(
        Contract::parse(&reserialized, Path::new("c"))
            .unwrap()
            .hash(),
        c.hash()
    );
    let explicit = text.replace(
        "kind = \"textarea\"",
        "kind = \"textarea\"\n# strict is the default\n",
    );
    assert_eq!(
        Contract::parse(&explicit, Path::new("d")).unwrap().hash(),
        c.hash()
    );
    // A changed locator, a changed window: a new version.
    let changed = text.replace("{ css = \"#publish\" }", "{ css = \"button#publish\" }");
    assert_ne!(
        Contract::parse(&changed, Path::new("e")).unwrap().hash(),
        c.hash()
    );
    let changed = text.replace("propagation_ms = 2000", "propagation_ms = 2500");
    assert_ne!(
        Contract::parse(&changed, Path::new("f")).unwrap().hash(),
        c.hash()
    );
}

#[test]
fn syntax_and_type_errors_point_at_the_spot() {
    let text = fixture_text().replace("propagation_ms = 2000", "propagation_ms = \"soon\"");
    let p = problems(&text);
    assert_eq!(p.len(), 1);
    assert_eq!(p[0].line, line_of(&text, "propagation_ms"));
    assert!(p[0].message.contains("invalid type"), "{:?}", p[0]);
    let text = fixture_text().replace(
        "kind = \"textarea\"",
        "kind = \"textarea\"\nplaceholder = \"x\"",
    );
    let p = problems(&text);
    assert_eq!((p[0].line, p[0].column), (line_of(&text, "placeholder"), 1));
    assert!(
        p[0].message.contains("unknown field `placeholder`") && !p[0].help.is_empty(),
        "{:?}",
        p[0]
    );
    let text = fixture_text().replace("kind = \"textarea\"", "kind = \"text_area\"");
    let p = problems(&text);
    assert_eq!(p[0].line, line_of(&text, "text_area"));
    assert!(p[0].message.contains("unknown variant"), "{:?}", p[0]);
}

#[test]
fn semantic_errors_are_all_listed_with_positions_and_help() {
    let text = fixture_text()
        .replace(
            "url_regex = '/p/(?P<id>[a-z0-9]+)$'",
            "url_regex = '/p/([a-z0-9]+'",
        )
        .replace("field = \"text\"", "field = \"body\"")
        .replace(
            "{ role = \"button\", name = \"Publish\" }",
            "{ role = \"buton\", name = \"Publish\" }",
        )
        .replace(
            "permalink = \"{base_url}/p/{id}\"",
            "permalink = \"{base_url}/p/{post}\"",
        )
        .replace("rejection_statuses = [422]", "rejection_statuses = [200]");
    let p = problems(&text);
    let find = |needle: &str| {
        p.iter()
            .find(|x| x.message.contains(needle))
            .unwrap_or_else(|| panic!("no {needle:?} in {p:#?}"))
    };
    assert_eq!(
        find("regex does not compile").line,
        line_of(&text, "/p/([a-z0-9]+'")
    );
    assert_eq!(
        find("no compose field named \"body\"").line,
        line_of(&text, "field = \"body\"")
    );
    assert_eq!(
        find("unknown ARIA role \"buton\"").line,
        line_of(&text, "buton")
    );
    assert_eq!(
        find("unknown placeholder {post}").line,
        line_of(&text, "{post}")
    );
    assert_eq!(
        find("200 is not a 4xx rejection status").line,
        line_of(&text, "rejection_statuses")
    );
    assert!(p.iter().all(|x| !x.help.is_empty() && x.column >= 1));
    assert!(
        p.windows(2).all(|w| w[0].line <= w[1].line),
        "sorted by position"
    );
}

#[test]
fn a_step_can_never_target_the_publish_control() {
    let text = fixture_text().replace(
        "field = \"text\"\nnon_publishing = true",
        "locator = { strategies = [{ css = \"#publish\" }, { role = \"button\", name = \"Publish\" }] }\nnon_publishing = true",
    );
    let p = problems(&text);
    assert!(
        p.iter()
            .any(|x| x.message.contains("targets the publish control")),
        "{p:#?}"
    );
    let text = fixture_text().replace("non_publishing = true", "non_publishing = false");
    assert!(
        problems(&text)
            .iter()
            .any(|x| x.message.contains("non_publishing = true"))
    );
}

#[test]
fn check_command_prints_positions_and_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.toml");
    let text = fixture_text().replace(
        "kind = \"textarea\"",
        "kind = \"textarea\"\nplaceholder = \"x\"",
    );
    std::fs::write(&bad, &text).unwrap();
    let out = Command::new(BIN)
        .args(["contract", "check"])
        .arg(&bad)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    let want = format!(
        "{}:{}:1: error: unknown field `placeholder`",
        bad.display(),
        line_of(&text, "placeholder")
    );
    assert!(err.contains(&want), "{err}");
    let out = Command::new(BIN)
        .args(["contract", "check", "--json"])
        .arg(&bad)
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["ok"], false);
    assert_eq!(v["problems"][0]["line"], line_of(&text, "placeholder"));
    let good = Path::new(env!("CARGO_MANIFEST_DIR")).join("selectors/fixture.toml");
    let out = Command::new(BIN)
        .args(["contract", "check", "--json"])
        .arg(&good)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["contract_hash"].as_str().map(str::len), Some(64));
}

#[test]
fn check_refuses_a_5xx_rejection_status_and_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("five.toml");
    let text = fixture_text().replace(
        "rejection_statuses = [422]",
        "rejection_statuses = [422, 500]",
    );
    std::fs::write(&file, &text).unwrap();
    let out = Command::new(BIN)
        .args(["contract", "check"])
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    let want = format!(
        "{}:{}:",
        file.display(),
        line_of(&text, "rejection_statuses")
    );
    assert!(err.contains(&want), "{err}");
    assert!(
        err.contains("500 is a server error, not a rejection"),
        "{err}"
    );
    assert!(
        err.contains("at: publish.rejection_statuses[1]") && err.contains("may be live"),
        "{err}"
    );
    assert!(
        !err.contains("422"),
        "422 is a fine rejection status: {err}"
    );
    // A 3xx is not a rejection either; a 4xx alone passes.
    for (bad, code) in [("[302]", 2), ("[599]", 2), ("[400, 409, 499]", 0)] {
        let text = fixture_text().replace(
            "rejection_statuses = [422]",
            &format!("rejection_statuses = {bad}"),
        );
        std::fs::write(&file, &text).unwrap();
        let out = Command::new(BIN)
            .args(["contract", "check", "--json"])
            .arg(&file)
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(code),
            "{bad}: {}",
            String::from_utf8_lossy(&out.stdout)
        );
    }
}

#[test]
fn body_header_and_synced_rules_are_format_2_and_checked() {
    let create = r#"create_request = { method = "POST", url = "{base_url}/api/posts" }"#;
    let inside = r#"create_request = { method = "POST", url = "{base_url}/api/posts", body_regex = '"status":"publish"', headers = { "x-action" = "^publish$" } }"#;
    let with_inside = fixture_text().replace(create, inside);
    assert_ne!(with_inside, fixture_text());
    // Format 1 names each key that needs format 2.
    let p = problems(&with_inside);
    for key in ["body_regex", "headers"] {
        assert!(
            p.iter()
                .any(|x| x.path == format!("publish.create_request.{key}")
                    && x.message.contains("needs format = 2")),
            "{key}: {p:?}"
        );
    }
    let v2 = with_inside.replace("format = 1", "format = 2");
    Contract::parse(&v2, Path::new("t.toml")).expect("valid in format 2");
    // A regex that does not compile, a header name that is not one.
    let bad = v2
        .replace(r#"'"status":"publish"'"#, "'(unclosed'")
        .replace(r#""x-action" = "^publish$""#, r#""x action" = "^publish$""#);
    let p = problems(&bad);
    assert!(
        p.iter()
            .any(|x| x.path == "publish.create_request.body_regex"
                && x.message.contains("does not compile")),
        "{p:?}"
    );
    assert!(
        p.iter()
            .any(|x| x.path.starts_with("publish.create_request.headers")
                && x.message.contains("not a header name")),
        "{p:?}"
    );
    // A synced signal is format 2 and looks at an attribute or a class, not both.
    let synced = "[[success]]\nsynced = { css = \"#status\", attribute = \"data-saved\", class = \"ok\", when = \"disappears\" }\n\n[readback]";
    let text = fixture_text()
        .replace("format = 1", "format = 2")
        .replace("[readback]", synced);
    let p = problems(&text);
    assert!(
        p.iter()
            .any(|x| x.path == "success[2].synced" && x.message.contains("at most one")),
        "{p:?}"
    );
    let ok = text.replace(", class = \"ok\"", "");
    let c = Contract::parse(&ok, Path::new("t.toml")).expect("valid");
    assert!(c.success[2].synced.is_some());
    let p = problems(&ok.replace("format = 2", "format = 1"));
    assert!(
        p.iter()
            .any(|x| x.path == "success[2].synced" && x.message.contains("needs format = 2")),
        "{p:?}"
    );
}

#[test]
fn a_marker_field_is_format_2_a_declared_field_and_never_the_body() {
    let with = |extra: &str| {
        fixture_text().replace("format = 1", "format = 2").replace(
            "compare = \"exact-nfc\"",
            &format!("compare = \"exact-nfc\"\n{extra}"),
        )
    };
    Contract::parse(
        &with("marker_field = \"title\"\nmarker = \".post-title\""),
        Path::new("t.toml"),
    )
    .expect("valid");
    for (extra, path, says) in [
        (
            "marker_field = \"text\"",
            "readback.marker_field",
            "body field",
        ),
        (
            "marker_field = \"tags\"",
            "readback.marker_field",
            "no compose field",
        ),
        (
            "marker = \".post-title\"",
            "readback.marker",
            "needs marker_field",
        ),
    ] {
        let p = problems(&with(extra));
        assert!(
            p.iter().any(|x| x.path == path && x.message.contains(says)),
            "{extra}: {p:?}"
        );
    }
    let p = problems(&with("marker_field = \"title\"").replace("format = 2", "format = 1"));
    assert!(
        p.iter()
            .any(|x| x.path == "readback.marker_field" && x.message.contains("needs format = 2")),
        "{p:?}"
    );
}

/// Every whole contract shown in docs/contracts.md (a `toml` block with `platform =`) is valid, and so is
/// every contract shipped in `fixtures/contracts/`: the docs and the examples cannot drift from the checker.
#[test]
fn the_documented_and_shipped_example_contracts_are_valid() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(root.join("docs/contracts.md")).unwrap();
    let mut blocks = 0;
    for (i, block) in doc.split("```toml\n").skip(1).enumerate() {
        let text = block.split("```").next().unwrap();
        if !text.contains("platform =") {
            continue;
        }
        blocks += 1;
        if let Err(e) = Contract::parse(text, Path::new("docs/contracts.md")) {
            panic!("toml block {i} of docs/contracts.md: {e}\n{text}");
        }
    }
    assert!(blocks >= 1, "docs/contracts.md shows a whole contract");
    let mut shipped = 0;
    for entry in std::fs::read_dir(root.join("fixtures/contracts")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "toml") {
            shipped += 1;
            let c = Contract::load(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            assert_eq!(c.format, 2, "{}", path.display());
        }
    }
    assert!(shipped >= 6, "{shipped}");
}

/// `publish.key` (a publish that is a key pressed in the control: a chat box) is format 2, names one of
/// three keys, and with `enter` refuses a field whose line breaks are typed as Enter (that Enter would
/// publish part of the text).
#[test]
fn a_publish_key_is_format_2_and_refuses_line_breaks_typed_as_enter() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let v2 = std::fs::read_to_string(root.join("fixtures/contracts/enter-to-send.toml")).unwrap();
    let c = Contract::parse(&v2, Path::new("t.toml")).expect("valid in format 2");
    assert_eq!(c.publish.key, Some(oncepost::contract::PublishKey::Enter));
    let v1 = v2.replace("format = 2", "format = 1");
    let p = problems(&v1);
    assert!(
        p.iter()
            .any(|x| x.path == "publish.key" && x.message.contains("needs format = 2")),
        "{p:?}"
    );
    let unknown = v2.replace(r#"key = "enter""#, r#"key = "space""#);
    assert!(Contract::parse(&unknown, Path::new("t.toml")).is_err());
    // A contenteditable body typed with Enter between paragraphs, in a box where Enter sends.
    let typed_enter = v2.replace(
        "name = \"text\"\nkind = \"textarea\"",
        "name = \"text\"\nkind = \"contenteditable\"\nnewlines = \"keys\"",
    );
    assert_ne!(typed_enter, v2);
    let p = problems(&typed_enter);
    assert!(
        p.iter().any(|x| x.path == "compose.fields[0].newlines"
            && x.message.contains("Enter publishes here")),
        "{p:?}"
    );
    // With Control+Enter as the publish, Enter is only a line break.
    let ctrl = typed_enter.replace(r#"key = "enter""#, r#"key = "ctrl_enter""#);
    Contract::parse(&ctrl, Path::new("t.toml"))
        .expect("Enter is a line break when Control+Enter sends");
}

/// Every shipped platform contract (`selectors/*.toml`: Fixturebook's and the real apps' of the lab) passes
/// `oncepost contract check` through the binary.
#[test]
fn every_shipped_platform_contract_checks() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut checked = Vec::new();
    for entry in std::fs::read_dir(root.join("selectors")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "toml") {
            let out = Command::new(BIN)
                .args(["contract", "check"])
                .arg(&path)
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{}: {}",
                path.display(),
                String::from_utf8_lossy(&out.stderr)
            );
            checked.push(path.file_name().unwrap().to_string_lossy().into_owned());
        }
    }
    checked.sort();
    assert_eq!(
        checked,
        [
            "dokuwiki.toml",
            "fixture.toml",
            "mediawiki-visualeditor.toml",
            "mediawiki.toml",
            "redmine.toml",
            "wordpress.toml"
        ]
    );
}
