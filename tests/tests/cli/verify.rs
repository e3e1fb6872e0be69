//! `grove verify`: clean on a sound store, non-zero with the problem on a damaged one.

use super::{fixture, Grove};

#[test]
fn verify_reports_clean_stores_and_damage() {
    let g = Grove::new();
    g.ok(&[
        "import",
        fixture("edge-seed-harness.jsonl").to_str().unwrap(),
    ]);
    let v = g.json(&["verify", "--json"]);
    assert_eq!(v["sessions"], 1);
    assert_eq!(v["problems"].as_array().unwrap().len(), 0);
    // Damage one stored line through the key-value layer.
    {
        let st = g.open();
        let sid_bytes = st
            .kv()
            .get(&grove::keys::session_id("seed-harness"))
            .unwrap()
            .unwrap();
        let sid = u64::from_be_bytes(sid_bytes.as_slice().try_into().unwrap());
        // The session was imported, so its records are in log packs keyed by their first
        // record, and a pack ends with the line of its last record (docs/format.md): flip a
        // byte inside that line.
        let key = grove::keys::log_pack(sid, 0);
        let mut line = st.kv().get(&key).unwrap().unwrap();
        let n = line.len();
        line[n - 20] ^= 0x20;
        let mut b = grove::kv::WriteBatch::new();
        b.put(key, line);
        st.kv().apply(b).unwrap();
        st.flush().unwrap();
    }
    let out = g.run(&["verify", "seed"]);
    assert_eq!(out.status.code(), Some(3));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("seed-harness") && text.contains("content hash"),
        "{text}"
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("VerifyFailed"));
}
