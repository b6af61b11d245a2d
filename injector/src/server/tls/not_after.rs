//! The end of a certificate's validity (its `notAfter`), read from its DER with
//! just enough of X.509's structure to reach it: the metrics show how long the
//! served certificate has left, and no certificate crate is needed for that.

use tandem_common::calendar::days_since_epoch;

/// The tags of the DER elements on the way to `notAfter`.
const SEQUENCE: u8 = 0x30;
const INTEGER: u8 = 0x02;
const EXPLICIT_VERSION: u8 = 0xa0;
const UTC_TIME: u8 = 0x17;
const GENERALIZED_TIME: u8 = 0x18;

/// `notAfter` of the DER certificate `cert`, in seconds since the Unix epoch;
/// `None` when `cert` is not a certificate this reading understands.
pub fn not_after(cert: &[u8]) -> Option<i64> {
    let certificate = inside(cert, SEQUENCE)?;
    let mut tbs = inside(certificate, SEQUENCE)?;
    if let Some((EXPLICIT_VERSION, _, after)) = element(tbs) {
        tbs = after;
    }
    // serialNumber, signature (an AlgorithmIdentifier), issuer (a Name).
    for expected in [INTEGER, SEQUENCE, SEQUENCE] {
        let (tag, _, after) = element(tbs)?;
        if tag != expected {
            return None;
        }
        tbs = after;
    }
    let validity = inside(tbs, SEQUENCE)?;
    let (_, _, after_not_before) = element(validity)?;
    let (tag, time, _) = element(after_not_before)?;
    seconds(tag, time)
}

/// The contents of the element at the start of `der`, if its tag is `tag`.
fn inside(der: &[u8], tag: u8) -> Option<&[u8]> {
    match element(der)? {
        (found, contents, _) if found == tag => Some(contents),
        _ => None,
    }
}

/// The element at the start of `der`: its tag, its contents, what follows it.
/// Definite lengths only, as DER has.
fn element(der: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = der.split_first()?;
    let (&first, rest) = rest.split_first()?;
    let (length, rest) = if first < 0x80 {
        (usize::from(first), rest)
    } else {
        let octets = usize::from(first & 0x7f);
        if octets == 0 || octets > 4 || rest.len() < octets {
            return None;
        }
        let (octets, rest) = rest.split_at(octets);
        let length = octets
            .iter()
            .fold(0usize, |n, &b| (n << 8) | usize::from(b));
        (length, rest)
    };
    if rest.len() < length {
        return None;
    }
    let (contents, after) = rest.split_at(length);
    Some((tag, contents, after))
}

/// A UTCTime (`YYMMDDHHMMSSZ`, years 1950 to 2049 as RFC 5280 reads them) or
/// a GeneralizedTime (`YYYYMMDDHHMMSSZ`) as seconds since the epoch.
fn seconds(tag: u8, time: &[u8]) -> Option<i64> {
    let digits = std::str::from_utf8(time).ok()?.strip_suffix('Z')?;
    if !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let (year, rest) = match (tag, digits.len()) {
        (UTC_TIME, 12) => {
            let yy: i64 = digits[..2].parse().ok()?;
            (if yy >= 50 { 1900 + yy } else { 2000 + yy }, &digits[2..])
        }
        (GENERALIZED_TIME, 14) => (digits[..4].parse().ok()?, &digits[4..]),
        _ => return None,
    };
    let two = |at: usize| rest[at..at + 2].parse::<i64>().ok();
    let (month, day) = (two(0)?, two(2)?);
    let (hour, minute, second) = (two(4)?, two(6)?, two(8)?);
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) {
        return None;
    }
    if hour > 23 || minute > 59 || second > 60 {
        return None;
    }
    Some(days_since_epoch(year, month, day) * 86_400 + hour * 3_600 + minute * 60 + second)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rcgen::{CertificateParams, KeyPair, date_time_ymd};

    #[test]
    fn both_time_forms_are_read_and_anything_else_is_refused() {
        assert_eq!(seconds(UTC_TIME, b"700101000001Z"), Some(1));
        assert_eq!(seconds(UTC_TIME, b"491231235959Z"), Some(2_524_607_999));
        assert_eq!(seconds(UTC_TIME, b"500101000000Z"), Some(-631_152_000));
        assert_eq!(
            seconds(GENERALIZED_TIME, b"20500101000000Z"),
            Some(2_524_608_000)
        );
        for (tag, bad) in [
            (UTC_TIME, &b"700101000001"[..]),
            (UTC_TIME, b"20500101000000Z"),
            (GENERALIZED_TIME, b"700101000001Z"),
            (UTC_TIME, b"701301000000Z"),
            (UTC_TIME, b"70010100000+Z"),
            (INTEGER, b"700101000001Z"),
        ] {
            assert_eq!(seconds(tag, bad), None, "{bad:?}");
        }
    }

    #[test]
    fn not_after_is_read_from_certificates_rcgen_makes_and_truncation_is_refused() {
        for (year, expected) in [(2049, 2_524_521_600), (2051, 2_587_593_600)] {
            let mut params = CertificateParams::new(vec!["localhost".into()]).unwrap();
            params.not_after = date_time_ymd(year, 12, 31);
            let cert = params.self_signed(&KeyPair::generate().unwrap()).unwrap();
            let der = cert.der().to_vec();
            assert_eq!(not_after(&der), Some(expected), "{year}");
            for cut in [1, 10, der.len() / 2, der.len() - 1] {
                assert_eq!(not_after(&der[..cut]), None, "{year}, {cut} bytes");
            }
        }
        assert_eq!(not_after(b""), None);
        assert_eq!(not_after(&[0x30, 0x84, 0xff, 0xff, 0xff, 0xff]), None);
    }
}
