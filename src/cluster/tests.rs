use super::*;

#[test]
fn redact_url_drops_only_the_password() {
    assert_eq!(redact_url("redis://:pw@h:1/0"), "redis://h:1/0");
    assert_eq!(redact_url("redis://me:pw@h:1/0"), "redis://me@h:1/0");
    assert_eq!(redact_url("redis://h:1/0"), "redis://h:1/0");
    assert_eq!(redact_url("redis://me@h"), "redis://me@h");
}

#[test]
fn broker_errors_name_the_key_and_hide_the_password() {
    for url in [
        "http://:pw@h:1",
        "rediss://:pw@h:1/0#insecure",
        "redis://:pw@h:notaport/0",
    ] {
        let e = parse_broker(url).unwrap_err().to_string();
        assert!(e.contains("cluster.broker"), "{e}");
        assert!(!e.contains("pw"), "{e}");
    }
    assert!(parse_broker("redis://127.0.0.1:6379/0").is_ok());
    assert!(parse_broker("rediss://:pw@127.0.0.1:6380/0").is_ok());
}
