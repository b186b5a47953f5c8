//! Keeps source away from Lua 5.1's handling of `[[` nested in a level-0
//! long string or comment, the lexer path Redis patched for CVE-2025-46819
//! (out-of-bounds read on malformed long brackets). Since that fix Redis
//! reads such a `[[` as plain content; so does rlockd, by giving each of
//! those long brackets a level whose closing bracket its content does not
//! hold. The content, and so the compiled chunk and every line number, is
//! unchanged, and the vulnerable path is never reached.

/// The source with every level-0 long bracket that contains `[[` raised to
/// a higher level; `None` when there is none (the common case).
pub fn relevel(src: &[u8]) -> Option<Vec<u8>> {
    let mut out: Option<Vec<u8>> = None;
    let mut copied = 0;
    let mut i = 0;
    while i < src.len() {
        match src[i] {
            b'\'' | b'"' => i = short_string_end(src, i),
            b'-' if src.get(i + 1) == Some(&b'-') => {
                i += 2;
                if long_open(src, i).is_none() {
                    i = src[i..]
                        .iter()
                        .position(|&c| c == b'\n' || c == b'\r')
                        .map_or(src.len(), |n| i + n);
                }
            }
            b'[' => match long_open(src, i) {
                Some(0) => {
                    let body = i + 2;
                    let close = find(src, body, b"]]");
                    let content = &src[body..close.unwrap_or(src.len())];
                    if find(content, 0, b"[[").is_some() {
                        let level = free_level(content);
                        let out = out.get_or_insert_with(|| Vec::with_capacity(src.len() + 8));
                        out.extend_from_slice(&src[copied..i]);
                        push_bracket(out, b'[', level);
                        out.extend_from_slice(content);
                        copied = body + content.len();
                        if close.is_some() {
                            push_bracket(out, b']', level);
                            copied += 2;
                        }
                    }
                    i = close.map_or(src.len(), |c| c + 2);
                }
                Some(level) => {
                    let mut closing = vec![b']'];
                    closing.extend(std::iter::repeat_n(b'=', level));
                    closing.push(b']');
                    i = find(src, i + level + 2, &closing).map_or(src.len(), |c| c + level + 2);
                }
                None => i += 1,
            },
            _ => i += 1,
        }
    }
    let mut out = out?;
    out.extend_from_slice(&src[copied..]);
    Some(out)
}

/// The level of the long bracket opening at `at` (`[` `=`* `[`), if one
/// does.
fn long_open(src: &[u8], at: usize) -> Option<usize> {
    if src.get(at) != Some(&b'[') {
        return None;
    }
    let level = src[at + 1..].iter().take_while(|&&c| c == b'=').count();
    (src.get(at + 1 + level) == Some(&b'[')).then_some(level)
}

/// Just past the short string opening at `at`. A backslash escapes the
/// next byte; an unescaped line end ends it (Lua reports that error).
fn short_string_end(src: &[u8], at: usize) -> usize {
    let quote = src[at];
    let mut i = at + 1;
    while i < src.len() {
        match src[i] {
            b'\\' => i += 2,
            b'\n' | b'\r' => return i,
            c if c == quote => return i + 1,
            _ => i += 1,
        }
    }
    src.len()
}

fn find(hay: &[u8], from: usize, needle: &[u8]) -> Option<usize> {
    hay.get(from..)?
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|n| from + n)
}

/// The lowest level above 0 whose closing bracket `content` does not hold.
fn free_level(content: &[u8]) -> usize {
    (1..)
        .find(|&level| {
            let mut closing = vec![b']'];
            closing.extend(std::iter::repeat_n(b'=', level));
            closing.push(b']');
            find(content, 0, &closing).is_none()
        })
        .unwrap_or(1)
}

fn push_bracket(out: &mut Vec<u8>, bracket: u8, level: usize) {
    out.push(bracket);
    out.extend(std::iter::repeat_n(b'=', level));
    out.push(bracket);
}

#[cfg(test)]
mod tests {
    use super::relevel;

    fn run(src: &str) -> Option<String> {
        relevel(src.as_bytes()).map(|v| String::from_utf8(v).unwrap())
    }

    #[test]
    fn only_nested_level_zero_brackets_change() {
        assert_eq!(run("return [[a]] .. [=[ [[ ]=]"), None);
        assert_eq!(run("return '[[ [['"), None);
        assert_eq!(run("-- [[ [[\nreturn 1"), None);
        assert_eq!(run("return [[a [[b]]"), Some("return [=[a [[b]=]".into()));
        assert_eq!(
            run("return [[ ]=] [[ ]] .. 1"),
            Some("return [==[ ]=] [[ ]==] .. 1".into())
        );
        assert_eq!(
            run("--[[ [[ ]]\nreturn 1"),
            Some("--[=[ [[ ]=]\nreturn 1".into())
        );
        assert_eq!(run("return [[[["), Some("return [=[[[".into()));
        assert_eq!(
            run("x = \"[[\" .. [[[[]]"),
            Some("x = \"[[\" .. [=[[[]=]".into())
        );
    }
}
