use super::wire::{Origin, decode_msg, encode_msg, is_copy, parse_id};
use super::*;
use crate::rl::armac::actor::ActorMsg;
use crate::rl::armac::candidates::Candidate;

#[test]
fn entries_written_again_by_a_retried_xadd_are_copies() {
    let origin = |u: &str| {
        let f: HashMap<String, Vec<u8>> = [("u".to_string(), u.as_bytes().to_vec())].into();
        Origin::of(&f)
    };
    let mut seen = HashMap::new();
    // Token a sends 1..3, the connection drops after 1 and 2 got in, the pipeline is sent
    // again: 1, 2 come twice. Token b is another actor thread.
    let stream = ["a:1", "a:2", "b:1", "a:1", "a:2", "a:3", "b:2", "b:2"];
    let copies: Vec<bool> = stream
        .iter()
        .map(|u| is_copy(&mut seen, &origin(u)))
        .collect();
    assert_eq!(
        copies,
        [false, false, false, true, true, false, false, true]
    );
    // Entries without a token (older actors) are never copies; a bad `u` is ignored.
    assert!(!is_copy(&mut seen, &Origin::default()));
    assert!(origin("a:x").token.is_none());
    assert_eq!(origin("ab:cd:7").token, Some(("ab:cd".to_string(), 7)));
}

#[test]
fn stream_ids_order_numerically() {
    assert!(parse_id("10-0") > parse_id("9-5"));
    assert!(parse_id("5-10") > parse_id("5-9"));
    assert_eq!(parse_id("7-3"), (7, 3));
}

#[test]
fn candidate_returns_survive_the_stream_encoding() {
    let m = ActorMsg::CandidateReturn {
        epoch: 7,
        candidate: Candidate::all()[2],
        total: -1.25,
        count: 64,
    };
    let f: HashMap<String, Vec<u8>> = encode_msg(&m, 3, 2)
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
    match decode_msg(&f, 3, 2).unwrap() {
        ActorMsg::CandidateReturn {
            epoch,
            candidate,
            total,
            count,
        } => {
            assert_eq!(
                (epoch, candidate, total, count),
                (7, Candidate::all()[2], -1.25, 64)
            );
        }
        _ => panic!("wrong kind"),
    }
    let mut bad = f.clone();
    bad.insert("k".into(), b"x".to_vec());
    assert!(decode_msg(&bad, 3, 2).is_err());
}
