//! Glob matching with Redis's rules (`KEYS`, `SCAN MATCH`, pattern
//! subscriptions): `*`, `?`, `[set]`, `[^set]`, `[a-z]`, and `\` escapes.
//! Iterative with single-star backtracking, so hostile patterns cannot
//! blow the stack or go exponential.

/// Redis's rules include one quirk: an empty text matches only an empty
/// pattern (not even `*`); commands that special-case a lone `*` (KEYS,
/// SCAN) still list an empty key.
pub fn glob_match(pattern: &[u8], text: &[u8], nocase: bool) -> bool {
    if text.is_empty() {
        return pattern.is_empty();
    }
    let (mut p, mut t) = (0, 0);
    // Where to resume after the last `*`: the pattern index after it, and
    // the text index it currently swallows up to.
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        if p < pattern.len() {
            match pattern[p] {
                b'*' => {
                    while p < pattern.len() && pattern[p] == b'*' {
                        p += 1;
                    }
                    if p == pattern.len() {
                        return true;
                    }
                    star = Some((p, t));
                    continue;
                }
                _ => {
                    if let Some(next) = match_one(pattern, p, text[t], nocase) {
                        p = next;
                        t += 1;
                        continue;
                    }
                }
            }
        }
        match star {
            Some((sp, st)) => {
                p = sp;
                t = st + 1;
                star = Some((sp, st + 1));
            }
            None => return false,
        }
    }
    pattern[p..].iter().all(|&c| c == b'*')
}

/// Matches one text byte against the pattern element at `p`; returns the
/// index after that element.
fn match_one(pattern: &[u8], p: usize, c: u8, nocase: bool) -> Option<usize> {
    let eq = |a: u8, b: u8| {
        if nocase {
            a.eq_ignore_ascii_case(&b)
        } else {
            a == b
        }
    };
    match pattern[p] {
        b'?' => Some(p + 1),
        b'[' => {
            let mut i = p + 1;
            let negate = pattern.get(i) == Some(&b'^');
            if negate {
                i += 1;
            }
            let mut matched = false;
            loop {
                match pattern.get(i) {
                    // An unclosed set ends with the pattern.
                    None => break,
                    Some(b']') => {
                        i += 1;
                        break;
                    }
                    Some(b'\\') if i + 1 < pattern.len() => {
                        matched |= eq(pattern[i + 1], c);
                        i += 2;
                    }
                    Some(&lo) if pattern.get(i + 1) == Some(&b'-') && i + 2 < pattern.len() => {
                        let hi = pattern[i + 2];
                        let (lo, hi) = if lo <= hi { (lo, hi) } else { (hi, lo) };
                        let in_range = |x: u8| lo <= x && x <= hi;
                        matched |= if nocase {
                            in_range(c.to_ascii_lowercase()) || in_range(c.to_ascii_uppercase())
                        } else {
                            in_range(c)
                        };
                        i += 3;
                    }
                    Some(&x) => {
                        matched |= eq(x, c);
                        i += 1;
                    }
                }
            }
            (matched != negate).then_some(i)
        }
        b'\\' if p + 1 < pattern.len() => eq(pattern[p + 1], c).then_some(p + 2),
        x => eq(x, c).then_some(p + 1),
    }
}

#[cfg(test)]
mod tests {
    use super::glob_match;

    fn m(p: &str, t: &str) -> bool {
        glob_match(p.as_bytes(), t.as_bytes(), false)
    }

    #[test]
    fn basics() {
        assert!(m("*", "a"));
        assert!(m("h?llo", "hello"));
        assert!(m("h*llo", "heeeello"));
        assert!(m("h[ae]llo", "hallo"));
        assert!(!m("h[^e]llo", "hello"));
        assert!(m("h[a-b]llo", "hbllo"));
        assert!(m("h[b-a]llo", "hallo"));
        assert!(m("h\\*llo", "h*llo"));
        assert!(!m("h\\*llo", "hallo"));
        assert!(m(
            "redisson_lock__channel:{*}",
            "redisson_lock__channel:{x}"
        ));
        assert!(!m("a*b", "acbd"));
        assert!(m("a*b*c", "aXbYbZc"));
        assert!(m("[abc", "b"));
    }

    /// Checked against redis-server 7.0 (PUBSUB CHANNELS with these patterns).
    #[test]
    fn odd_patterns_match_like_redis() {
        // An empty text matches nothing but an empty pattern.
        assert!(!m("*", ""));
        assert!(!m("**", ""));
        assert!(m("", ""));
        assert!(!m("", "a"));
        // `-` at the end of a set is a range up to `]`, which leaves the
        // set unclosed.
        assert!(m("[a-]", "]"));
        assert!(m("[a-]", "^"));
        assert!(!m("[a-]", "-"));
        assert!(m("[a-c-e]", "-"));
        assert!(m("[a-c-e]", "e"));
        assert!(!m("[a-c-e]", "d"));
        // `]` first closes an empty set; `\` escapes inside a set.
        assert!(!m("[]a]", "a"));
        assert!(!m("[]a]", "]a]"));
        assert!(m("[\\]]", "]"));
        assert!(m("[\\-]", "-"));
        assert!(m("[[]", "["));
        // An unclosed set runs to the end of the pattern.
        assert!(m("a[b-", "ab"));
        assert!(!m("a[", "a"));
        // A trailing backslash is literal.
        assert!(m("a\\", "a\\"));
        assert!(m("\\a", "a"));
        assert!(m("[^-]", "a"));
        assert!(!m("[^-]", "-"));
    }

    #[test]
    fn many_stars_are_fast() {
        let pat = "a*".repeat(50) + "b";
        let text = "a".repeat(200);
        assert!(!m(&pat, &text));
    }
}
