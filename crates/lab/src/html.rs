//! Small HTML helpers shared by every page the lab writes (`aspace bench`'s
//! and `aspace report`'s report.html, `aspace predict`'s page): escaping,
//! tables and the page style. Nothing here knows what a result is.

use std::fmt::Write as _;

/// The style sheet of every page: a readable width, ruled tables with
/// numbers right-aligned, and `.proj` (red) for predictions and projections.
pub const STYLE: &str = "body{font-family:sans-serif;max-width:1200px;margin:2em auto;padding:0 1em}\
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}\
th{background:#f3f3f3}td:first-child,th:first-child{text-align:left}.proj{color:#a00}";

/// `s` escaped for HTML text and attribute values.
pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// An HTML table of `rows` under `head`, every cell escaped.
pub fn table(rows: &[Vec<String>], head: &[&str]) -> String {
    let mut o = String::from("<table><tr>");
    for h in head {
        let _ = write!(o, "<th>{}</th>", esc(h));
    }
    o.push_str("</tr>");
    for r in rows {
        o.push_str("<tr>");
        for c in r {
            let _ = write!(o, "<td>{}</td>", esc(c));
        }
        o.push_str("</tr>");
    }
    o.push_str("</table>");
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup_and_quotes() {
        assert_eq!(
            esc(r#"<a href="x">&</a>"#),
            "&lt;a href=&quot;x&quot;&gt;&amp;&lt;/a&gt;"
        );
        let t = table(&[vec!["<b>".into(), "1".into()]], &["name", "n"]);
        assert_eq!(
            t,
            "<table><tr><th>name</th><th>n</th></tr><tr><td>&lt;b&gt;</td><td>1</td></tr></table>"
        );
    }
}
