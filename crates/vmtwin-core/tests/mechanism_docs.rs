//! Every mechanism file opens with a prose account and the three headings users look for.

use std::fs;
use std::path::Path;

const MECHANISM_DIRS: &[&str] = &["cpu", "mem", "storage", "guest"];
/// Index and parameter files: they describe, they are not mechanisms.
const NOT_MECHANISMS: &[&str] = &["mod.rs", "params.rs"];

#[test]
fn mechanism_files_open_with_prose_tunables_counters_and_gaps() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut checked = 0;
    for dir in MECHANISM_DIRS {
        let Ok(entries) = fs::read_dir(src.join(dir)) else { continue };
        for entry in entries {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_str().unwrap().to_string();
            if !name.ends_with(".rs") || NOT_MECHANISMS.contains(&name.as_str()) {
                continue;
            }
            let text = fs::read_to_string(&path).unwrap();
            assert!(text.starts_with("//!"), "{} does not open with a //! block", path.display());
            let header: String = text.lines().take_while(|l| l.starts_with("//!")).collect::<Vec<_>>().join("\n");
            for heading in ["# Tunables", "# Counters", "# Known gaps"] {
                assert!(header.contains(&format!("//! {heading}")), "{} lacks '{heading}' in its opening block", path.display());
            }
            checked += 1;
        }
    }
    assert!(checked >= 5, "only {checked} mechanism files found");
}

#[test]
fn every_scheduler_tunable_names_its_unit_and_default() {
    let text = fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/cpu/params.rs")).unwrap();
    let mut doc = String::new();
    let mut fields = 0;
    for line in text.lines().map(str::trim) {
        if let Some(d) = line.strip_prefix("///") {
            doc.push_str(d);
        } else if let Some(field) = line.strip_prefix("pub ").filter(|l| l.contains(':') && !l.starts_with("fn")) {
            let name = field.split(':').next().unwrap();
            let unit_in_name = ["_ns", "_ms", "_mhz", "_bytes", "_pages"].iter().any(|u| name.ends_with(u));
            assert!(unit_in_name || doc.contains("dimensionless"), "{name}: no unit in its name, and its doc does not say it is dimensionless");
            assert!(doc.contains("Default"), "{name}: its doc gives no default");
            fields += 1;
            doc.clear();
        } else {
            doc.clear();
        }
    }
    assert!(fields >= 6, "found only {fields} tunables");
}
