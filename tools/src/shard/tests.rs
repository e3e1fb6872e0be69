//! Unit tests of the map's layout and routing (the whole system is tested in
//! tests/tests/serve/shard.rs against real etcd and PostgreSQL).

use super::etcd::{prefix_end, Etcd, EtcdError, KeyValue};
use super::map::{even_ranges, slot, Keys, MapError, ShardMap, SLOTS};

#[test]
fn prefix_end_is_the_next_key() {
    assert_eq!(prefix_end(b"/grove/"), b"/grove0".to_vec());
    assert_eq!(prefix_end(b"a\xff"), b"b".to_vec());
}

#[test]
fn endpoints_must_be_http_urls() {
    assert!(matches!(Etcd::new(""), Err(EtcdError::NoEndpoints)));
    assert!(matches!(
        Etcd::new("127.0.0.1:2379"),
        Err(EtcdError::BadEndpoint(_))
    ));
    let etcd = Etcd::new("http://127.0.0.1:1, http://127.0.0.1:2/").map(|e| e.endpoints().to_vec());
    assert_eq!(
        etcd.ok(),
        Some(vec![
            "http://127.0.0.1:1".to_owned(),
            "http://127.0.0.1:2".to_owned()
        ])
    );
}

#[test]
fn slot_is_blake3_first_eight_bytes_mod_4096() {
    let id = "019abc00-0000-7000-8000-000000000000";
    let hash = blake3::hash(id.as_bytes());
    let mut first = [0u8; 8];
    first.copy_from_slice(&hash.as_bytes()[..8]);
    assert_eq!(u64::from(slot(id)), u64::from_be_bytes(first) % 4096);
    assert!((0..200).all(|i| slot(&format!("s{i}")) < SLOTS));
}

fn kv(key: &str, value: &str, rev: i64) -> KeyValue {
    KeyValue {
        key: key.to_owned(),
        value: value.as_bytes().to_vec(),
        mod_revision: rev,
    }
}

fn two_clusters() -> Vec<KeyValue> {
    let ranges = even_ranges(&["a".to_owned(), "b".to_owned()]);
    vec![
        kv("/g/clusters/a", r#"{"url":"postgres://a","table":"ta"}"#, 2),
        kv("/g/clusters/b", r#"{"url":"postgres://b","table":"tb"}"#, 2),
        kv(
            "/g/slots",
            &serde_json::to_string(&ranges).unwrap_or_default(),
            2,
        ),
    ]
}

#[test]
fn routes_by_slot_and_by_pin() {
    let keys = Keys::new("/g");
    let mut kvs = two_clusters();
    let map = ShardMap::parse(&keys, 5, &kvs).map_err(|e| e.to_string());
    let map = map.as_ref().map_err(String::clone);
    assert!(map.is_ok(), "{map:?}");
    let Ok(map) = map else { return };
    assert_eq!(map.slot_cluster(0), Some("a"));
    assert_eq!(map.slot_cluster(2047), Some("a"));
    assert_eq!(map.slot_cluster(2048), Some("b"));
    assert_eq!(map.slot_cluster(4095), Some("b"));
    // A session of cluster a, pinned to b: served by a while copying, by b once moved.
    let sid = (0..1000)
        .map(|i| format!("s{i}"))
        .find(|s| slot(s) < 2048)
        .unwrap_or_default();
    assert_eq!(
        map.route(&sid).map(|r| (r.cluster, r.frozen)),
        Some(("a", false))
    );
    kvs.push(kv(
        &format!("/g/moves/{sid}"),
        r#"{"from":"a","to":"b","state":"copying"}"#,
        6,
    ));
    let copying = ShardMap::parse(&keys, 6, &kvs).map_err(|e| e.to_string());
    assert_eq!(
        copying
            .as_ref()
            .ok()
            .and_then(|m| m.route(&sid))
            .map(|r| (r.cluster, r.frozen)),
        Some(("a", true))
    );
    kvs.pop();
    kvs.push(kv(
        &format!("/g/moves/{sid}"),
        r#"{"from":"a","to":"b","state":"moved"}"#,
        7,
    ));
    let moved = ShardMap::parse(&keys, 7, &kvs).map_err(|e| e.to_string());
    assert_eq!(
        moved
            .as_ref()
            .ok()
            .and_then(|m| m.route(&sid))
            .map(|r| (r.cluster, r.frozen)),
        Some(("b", false))
    );
}

#[test]
fn a_map_with_a_hole_or_an_unknown_cluster_is_refused() {
    let keys = Keys::new("/g/");
    let mut kvs = two_clusters();
    kvs[2] = kv(
        "/g/slots",
        r#"[{"first":0,"last":99,"cluster":"a"},{"first":101,"last":4095,"cluster":"b"}]"#,
        2,
    );
    assert!(matches!(
        ShardMap::parse(&keys, 1, &kvs),
        Err(MapError::Slots(_))
    ));
    kvs[2] = kv("/g/slots", r#"[{"first":0,"last":4095,"cluster":"c"}]"#, 2);
    assert!(matches!(
        ShardMap::parse(&keys, 1, &kvs),
        Err(MapError::Slots(_))
    ));
    assert!(matches!(
        ShardMap::parse(&keys, 1, &kvs[..2]),
        Err(MapError::Missing(_))
    ));
    assert_eq!(
        even_ranges(&["a".to_owned(), "b".to_owned(), "c".to_owned()])
            .last()
            .map(|r| r.last),
        Some(4095)
    );
}
