//! The routes served are the routes docs/api.md documents.

use super::*;

/// `METHOD /v1/...` pairs written in docs/api.md as code (a query string cut off).
fn documented() -> std::collections::BTreeSet<(String, String)> {
    let doc = include_str!("../../../../docs/api.md");
    let mut out = std::collections::BTreeSet::new();
    for piece in doc.split('`') {
        let mut words = piece.splitn(2, ' ');
        let (Some(method), Some(path)) = (words.next(), words.next()) else {
            continue;
        };
        if ["GET", "POST", "PUT", "DELETE"].contains(&method) && path.starts_with("/v1/") {
            let path = path.split(['?', ' ']).next().unwrap_or_default();
            out.insert((method.to_owned(), path.to_owned()));
        }
    }
    out
}

#[test]
fn every_route_is_documented_and_every_documented_route_is_served() {
    let served: std::collections::BTreeSet<(String, String)> = ROUTES
        .iter()
        .map(|r| (r.method.as_str().to_owned(), r.path.to_owned()))
        .collect();
    let documented = documented();
    let undocumented: Vec<_> = served.difference(&documented).collect();
    assert!(
        undocumented.is_empty(),
        "served but not in docs/api.md: {undocumented:?}"
    );
    let unserved: Vec<_> = documented.difference(&served).collect();
    assert!(
        unserved.is_empty(),
        "in docs/api.md but not served: {unserved:?}"
    );
    for (method, path) in ROUTES.iter().map(|r| (r.method.as_str(), r.path)) {
        assert!(
            handler(method, path).is_some(),
            "{method} {path} has no handler"
        );
    }
}

#[test]
fn every_route_says_what_it_does() {
    for route in ROUTES {
        assert!(
            !route.doc.is_empty() && !route.doc.ends_with('.'),
            "{} {}: the doc line is one line without a full stop",
            route.method.as_str(),
            route.path
        );
    }
}
