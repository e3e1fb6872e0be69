//! `grove gen`: deterministic synthetic sessions, written out or imported.

use super::Grove;

#[test]
fn gen_is_deterministic_and_imports() {
    let g = Grove::new();
    let args = [
        "gen",
        "--entries",
        "300",
        "--branches",
        "5",
        "--compaction-every",
        "50",
        "--seed",
        "7",
    ];
    let a = g.ok(&args);
    let b = g.ok(&args);
    assert_eq!(a, b, "same seed, same bytes");
    assert!(a.starts_with("{\"type\":\"session\""));
    assert_ne!(
        a,
        g.ok(&["gen", "--entries", "300", "--branches", "5", "--seed", "8"])
    );
    let file = g.store_dir().with_extension("jsonl");
    std::fs::write(&file, &a).unwrap();
    let imported = g.json(&["import", "--json", file.to_str().unwrap()]);
    let direct = {
        let other = Grove::new();
        let mut args = args.to_vec();
        args.extend(["--import", "--json"]);
        other.json(&args)
    };
    assert_eq!(imported["entries"], direct["entries"]);
    assert!(imported["entries"].as_u64().unwrap() >= 300);
    let out = g.ok(&["verify"]);
    assert!(out.contains("0 problem(s)"), "{out}");
}
