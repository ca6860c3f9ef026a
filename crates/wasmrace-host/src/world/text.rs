//! How the world's values are written in traces and reports: quoted
//! previews of guest bytes, registry names and bounded lists, one rule
//! for every kind of object (each kind's `describe` uses them).

/// Most items (waiters, readers, entries, messages) one description lists.
pub(super) const LIST_ITEMS: usize = 4;

/// Longest preview of guest bytes (a message, a name) a trace shows.
const PREVIEW_BYTES: usize = 64;

/// Guest bytes as traces show them: quoted, at most `PREVIEW_BYTES` of
/// them, with the number left out.
pub(super) fn preview(bytes: &[u8]) -> String {
    preview_n(bytes, PREVIEW_BYTES)
}

/// `preview` showing at most `max` bytes.
pub(super) fn preview_n(bytes: &[u8], max: usize) -> String {
    let shown = &bytes[..bytes.len().min(max)];
    let mut s = format!("{:?}", String::from_utf8_lossy(shown));
    // Escapes (`\u{7}`) can make the quoted form eight times longer.
    if let Some((cut, _)) = s.char_indices().nth(2 * max) {
        s.truncate(cut);
        s.push('…');
    }
    if shown.len() < bytes.len() {
        s.push_str(&format!(" (+{} bytes)", bytes.len() - shown.len()));
    }
    s
}

/// A registry name as traces show it.
pub(super) fn fmt_name(name: &[u8]) -> String {
    preview(name)
}

/// `head` and a list of items after `label`, at most `LIST_ITEMS` of them
/// (callers pass one more when there are more, shown as `…`):
/// `held by main; waiting: main.1, main.2`.
pub(super) fn with_list(head: String, label: &str, items: &[String]) -> String {
    if items.is_empty() {
        return head;
    }
    let mut list = items[..items.len().min(LIST_ITEMS)].join(", ");
    if items.len() > LIST_ITEMS {
        list.push_str(", …");
    }
    match (head.is_empty(), label.is_empty()) {
        (true, _) => format!("{label}: {list}"),
        (false, true) => format!("{head}: {list}"),
        (false, false) => format!("{head}; {label}: {list}"),
    }
}
