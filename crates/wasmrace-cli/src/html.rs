//! The `--html` report of `check`, `replay` and `bisect`: one
//! self-contained page (inline CSS, JS and SVG; nothing is fetched) with a
//! lane per thread and a row per step. [`render`] is a pure function of the
//! report data; every string that comes from the guest (test, thread and
//! object names, messages, log lines, source locations) is escaped, because
//! a module's exports and logs are whatever its author made them.

use std::fmt::Write;
use wasmrace_trace::{Failure, TraceEvent};

/// A whole page: a title line and one section per test reported.
#[derive(Clone, Debug)]
pub struct Page<'a> {
    /// The command that made it (`check`, `replay`, `bisect`).
    pub command: &'a str,
    /// The module, as the user named it.
    pub module: &'a str,
    /// One section per test.
    pub sections: Vec<Section<'a>>,
}

/// One test: its outcome lines, failure, interleaving and, from `bisect`,
/// the probability of the failure after each step.
#[derive(Clone, Debug, Default)]
pub struct Section<'a> {
    /// The test's name.
    pub test: &'a str,
    /// Lines said about the run (strategy, verdict, settings), shown as text.
    pub notes: Vec<String>,
    /// The failure, when there is one.
    pub failure: Option<&'a Failure>,
    /// The interleaving, one event per step.
    pub trace: &'a [TraceEvent],
    /// From `bisect`: P after each step.
    pub curve: Option<Curve>,
}

/// The probability of the failure along the steps (`bisect`).
#[derive(Clone, Debug, Default)]
pub struct Curve {
    /// `(step, P, exact)`, step 0 being the start, in step order.
    pub points: Vec<(usize, f64, bool)>,
    /// The sealing point, and whether it was proved.
    pub sealed: Option<(usize, bool)>,
    /// Decisive steps, one line each.
    pub decisive: Vec<(usize, String)>,
}

/// The page as one HTML document.
pub fn render(page: &Page) -> String {
    let mut out = String::with_capacity(16 * 1024);
    out.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    // No network: a page that fetched nothing can still be opened by
    // accident in a context that would; the policy makes that impossible.
    out.push_str(
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; \
         style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">\n",
    );
    let _ = writeln!(
        out,
        "<title>wasmrace {}: {}</title>",
        esc(page.command),
        esc(&page
            .sections
            .iter()
            .map(|s| s.test)
            .collect::<Vec<_>>()
            .join(", "))
    );
    // Errors are caught before any other script runs.
    let _ = writeln!(out, "<script>{ERROR_JS}</script>");
    let _ = writeln!(out, "<style>{CSS}</style>\n</head>");
    let _ = writeln!(
        out,
        "<body data-ready=\"0\" data-errors=\"0\">\n<header><h1>wasmrace {}</h1><p class=\"module\">{}</p></header>",
        esc(page.command),
        esc(page.module)
    );
    out.push_str("<main>\n<div id=\"sections\">\n");
    for (i, s) in page.sections.iter().enumerate() {
        section(&mut out, i, s);
    }
    out.push_str("</div>\n<aside id=\"panel\"><h2>step</h2><p class=\"hint\">click a step</p></aside>\n</main>\n");
    out.push_str("<pre id=\"wr-errors\" hidden></pre>\n");
    let _ = writeln!(
        out,
        "<script type=\"application/json\" id=\"wr-data\">{}</script>",
        script_json(&data_json(page))
    );
    let _ = writeln!(out, "<script>{MAIN_JS}</script>\n</body>\n</html>");
    out
}

/// Writes `page` to `path` by the rule of every output (never onto one of
/// the command's `inputs`, never through a link, atomically) and, unless
/// stdout is JSON, says so there.
pub fn write(
    path: &std::path::Path,
    page: &Page,
    json: bool,
    inputs: &crate::files::Inputs,
) -> anyhow::Result<()> {
    crate::files::write(path, render(page).as_bytes(), "html report", inputs)?;
    if !json {
        let shown = crate::files::shown_path(path);
        crate::output::print(&format!("html report written to {shown}\n"))?;
    }
    Ok(())
}

/// The threads of an interleaving in order of first appearance, then the
/// failing thread if it never ran a step.
pub fn lanes<'t>(trace: &'t [TraceEvent], failure: Option<&'t Failure>) -> Vec<&'t str> {
    let mut lanes: Vec<&str> = Vec::new();
    let failing = failure.and_then(|f| f.thread.as_deref());
    for t in trace.iter().map(|e| e.thread.as_str()).chain(failing) {
        if !lanes.contains(&t) {
            lanes.push(t);
        }
    }
    lanes
}

fn section(out: &mut String, index: usize, s: &Section) {
    let lanes = lanes(s.trace, s.failure);
    let _ = writeln!(
        out,
        "<section class=\"test\" data-section=\"{index}\" data-lane-count=\"{}\" data-step-count=\"{}\">",
        lanes.len(),
        s.trace.len()
    );
    let _ = writeln!(out, "<h2>test <code>{}</code></h2>", esc(s.test));
    for n in &s.notes {
        let _ = writeln!(out, "<p class=\"note\">{}</p>", esc(n));
    }
    out.push_str("<div class=\"summary\">");
    if let Some(f) = s.failure {
        failure_box(out, f);
    }
    if let Some(c) = &s.curve {
        curve_box(out, c, s.trace.len());
    }
    out.push_str("</div>\n");
    if let Some(cut) = s.trace.iter().find(|e| e.state_cut) {
        let _ = writeln!(
            out,
            "<p class=\"note state-cut\">object states are shown up to step {}: the trace's budget for them (--max-log-kib) was spent there</p>",
            cut.step.saturating_sub(1)
        );
    }
    if s.trace.is_empty() {
        out.push_str("<p class=\"note\">no steps: it failed before its first scheduling point, or there is no failing interleaving to show</p>\n</section>\n");
        return;
    }
    out.push_str(
        "<div class=\"scroll\"><table class=\"steps\">\n<thead><tr><th class=\"num\">step</th>",
    );
    if s.curve.is_some() {
        out.push_str("<th class=\"p\">P after</th>");
    }
    for (i, t) in lanes.iter().enumerate() {
        let _ = write!(
            out,
            "<th class=\"lane-head\" data-lane=\"{i}\" style=\"--hue:{}\">{}</th>",
            hue(i),
            esc(t)
        );
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    let failing = failing_step(s.trace, s.failure);
    for (k, e) in s.trace.iter().enumerate() {
        step_row(out, s, &lanes, k, e, failing == Some(k));
    }
    out.push_str("</tbody>\n</table></div>\n</section>\n");
}

/// The index of the failing thread's last step.
fn failing_step(trace: &[TraceEvent], failure: Option<&Failure>) -> Option<usize> {
    let t = failure?.thread.as_deref()?;
    trace.iter().rposition(|e| e.thread == t)
}

fn step_row(
    out: &mut String,
    s: &Section,
    lanes: &[&str],
    k: usize,
    e: &TraceEvent,
    failing: bool,
) {
    let lane = lanes.iter().position(|t| *t == e.thread).unwrap_or(0);
    let mut class = String::from("step");
    if e.preemption {
        class.push_str(" preempt");
    }
    if failing {
        class.push_str(" failing");
    }
    let _ = write!(
        out,
        "<tr class=\"{class}\" tabindex=\"0\" data-index=\"{k}\" data-lane=\"{lane}\"><td class=\"num\">{}{}</td>",
        e.step,
        if e.preemption {
            "<span class=\"pmark\" title=\"preemption: a switch away from a thread that could have continued\">preempted</span>"
        } else {
            ""
        }
    );
    if let Some(c) = &s.curve {
        match c.points.iter().find(|p| p.0 == k + 1) {
            Some(&(_, p, exact)) => {
                let _ = write!(
                    out,
                    "<td class=\"p\"><svg width=\"60\" height=\"10\" aria-hidden=\"true\"><rect width=\"60\" height=\"10\" fill=\"#eee\"/><rect width=\"{:.1}\" height=\"10\" fill=\"#c0392b\"/></svg> {}{p:.2}</td>",
                    p.clamp(0.0, 1.0) * 60.0,
                    if exact { "=" } else { "~" }
                );
            }
            None => out.push_str("<td class=\"p\"></td>"),
        }
    }
    for i in 0..lanes.len() {
        if i != lane {
            out.push_str("<td class=\"lane\"></td>");
            continue;
        }
        let _ = write!(
            out,
            "<td class=\"lane on\" style=\"--hue:{}\"><span class=\"op\">{}</span>",
            hue(i),
            esc(&e.op)
        );
        if let Some(o) = &e.object {
            let _ = write!(out, " <span class=\"obj\">{}</span>", esc(o));
        }
        if !e.detail.is_empty() {
            let _ = write!(out, " <span class=\"detail\">{}</span>", esc(&e.detail));
        }
        if let Some(site) = &e.site {
            let _ = write!(out, "<div class=\"site\">{}</div>", esc(site));
        }
        for v in &e.state {
            let _ = write!(
                out,
                "<div class=\"state\"><span class=\"obj\">{}</span>: {}</div>",
                esc(&v.object),
                esc(&v.value)
            );
        }
        for l in &e.logs {
            let _ = write!(out, "<div class=\"log\">log: {}</div>", esc(l));
        }
        out.push_str("</td>");
    }
    out.push_str("</tr>\n");
}

fn failure_box(out: &mut String, f: &Failure) {
    out.push_str("<div class=\"failure\"><h3>failure</h3><dl>");
    let mut field = |name: &str, value: &str| {
        let _ = write!(out, "<dt>{name}</dt><dd>{}</dd>", esc(value));
    };
    field("kind", f.kind.name());
    if let Some(t) = &f.thread {
        field("thread", t);
    }
    if !f.message.is_empty() {
        field("message", &f.message);
    }
    if let Some(l) = &f.location {
        field("location", l);
    }
    if let Some(h) = &f.hint {
        field("hint", h);
    }
    for w in &f.waiting {
        field(
            "waiting",
            &format!("{} waits for {}", w.thread, w.waits_for),
        );
    }
    out.push_str("</dl></div>");
}

/// P along the steps as an inline SVG polyline, the sealing point as a
/// vertical line, and the decisive steps as a list.
fn curve_box(out: &mut String, c: &Curve, steps: usize) {
    const W: f64 = 360.0;
    const H: f64 = 120.0;
    let x = |k: usize| 30.0 + (W - 40.0) * k as f64 / steps.max(1) as f64;
    let y = |p: f64| 10.0 + (H - 30.0) * (1.0 - p.clamp(0.0, 1.0));
    out.push_str("<div class=\"curve\"><h3>probability of the failure after each step</h3>");
    let _ = write!(
        out,
        "<svg class=\"curve-svg\" width=\"{W}\" height=\"{H}\" role=\"img\" aria-label=\"P after each step\">"
    );
    let _ = write!(
        out,
        "<line x1=\"30\" y1=\"{0}\" x2=\"{1}\" y2=\"{0}\" stroke=\"#999\"/><line x1=\"30\" y1=\"10\" x2=\"30\" y2=\"{0}\" stroke=\"#999\"/>\
         <text x=\"2\" y=\"14\" font-size=\"10\">1</text><text x=\"2\" y=\"{0}\" font-size=\"10\">0</text>\
         <text x=\"{1}\" y=\"{2}\" font-size=\"10\" text-anchor=\"end\">step {steps}</text>",
        y(0.0),
        x(steps),
        H - 4.0
    );
    if let Some((k, proved)) = c.sealed {
        let _ = write!(
            out,
            "<line x1=\"{0:.1}\" y1=\"10\" x2=\"{0:.1}\" y2=\"{1}\" stroke=\"#27ae60\" stroke-dasharray=\"4 3\"/>\
             <text x=\"{0:.1}\" y=\"{2}\" font-size=\"10\" text-anchor=\"middle\">sealed at {k}{3}</text>",
            x(k),
            y(0.0),
            H - 4.0 - 10.0,
            if proved { "" } else { " (est.)" }
        );
    }
    let points: Vec<String> = c
        .points
        .iter()
        .map(|&(k, p, _)| format!("{:.1},{:.1}", x(k), y(p)))
        .collect();
    let _ = write!(
        out,
        "<polyline fill=\"none\" stroke=\"#c0392b\" stroke-width=\"2\" points=\"{}\"/>",
        points.join(" ")
    );
    for &(k, p, exact) in &c.points {
        let _ = write!(
            out,
            "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"2.5\" fill=\"{}\"><title>after step {k}: P {}{p:.2}</title></circle>",
            x(k),
            y(p),
            if exact { "#c0392b" } else { "#fff" },
            if exact { "= " } else { "~ " }
        );
    }
    out.push_str("</svg>");
    if !c.decisive.is_empty() {
        out.push_str("<h3>decisive steps</h3><ul class=\"decisive\">");
        for (k, line) in &c.decisive {
            let _ = write!(out, "<li data-step=\"{k}\">{}</li>", esc(line));
        }
        out.push_str("</ul>");
    }
    out.push_str("</div>");
}

/// A lane's hue, spread around the colour wheel.
fn hue(lane: usize) -> usize {
    (lane * 137 + 210) % 360
}

/// The data the page's script reads: each section's steps as recorded, and
/// P after each step when known.
fn data_json(page: &Page) -> serde_json::Value {
    let sections: Vec<serde_json::Value> = page
        .sections
        .iter()
        .map(|s| {
            let p: Vec<serde_json::Value> = s
                .curve
                .iter()
                .flat_map(|c| c.points.iter())
                .map(|&(k, p, exact)| serde_json::json!([k, p, exact]))
                .collect();
            serde_json::json!({
                "test": s.test,
                "lanes": lanes(s.trace, s.failure),
                "trace": s.trace,
                "probability": p,
            })
        })
        .collect();
    serde_json::json!({ "sections": sections })
}

/// `value` as JSON safe inside a `<script>` element: `<`, `>` and `&` as
/// `\u` escapes (no `</script>` or `<!--` can end or alter the element),
/// and U+2028/U+2029 too (older JavaScript parsers end a line there).
pub fn script_json(value: &serde_json::Value) -> String {
    let text = value.to_string();
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out
}

/// `s` as HTML text or attribute value.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            // A NUL is replaced by the parser anyway; other controls are
            // shown, not interpreted.
            '\0' => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

const CSS: &str = r#"
body{font:13px/1.4 system-ui,sans-serif;margin:0;color:#222;background:#fafafa}
header{padding:8px 16px;background:#2c3e50;color:#fff}
header h1{margin:0;font-size:18px}
header .module{margin:2px 0 0;font-family:monospace;opacity:.8}
main{display:flex;align-items:flex-start;gap:12px;padding:12px 16px}
#sections{flex:1;min-width:0}
section.test{background:#fff;border:1px solid #ddd;border-radius:4px;padding:8px 12px;margin-bottom:12px}
section.test h2{font-size:16px;margin:4px 0}
.note{margin:2px 0;color:#555;font-family:monospace;white-space:pre-wrap}
.summary{display:flex;flex-wrap:wrap;gap:12px;margin:8px 0}
.failure{border-left:4px solid #c0392b;background:#fdf0ee;padding:4px 10px;max-width:520px}
.failure h3,.curve h3{margin:2px 0 4px;font-size:13px}
.failure dl{display:grid;grid-template-columns:max-content 1fr;gap:2px 10px;margin:0}
.failure dt{font-weight:600}
.failure dd{margin:0;font-family:monospace;white-space:pre-wrap;word-break:break-word}
.curve{border-left:4px solid #27ae60;padding:4px 10px}
.decisive{margin:0;padding-left:18px;font-family:monospace;font-size:12px}
div.scroll{overflow-x:auto}
table.steps{border-collapse:collapse;font-family:monospace;font-size:12px}
table.steps th{position:sticky;top:0;background:#fff;border-bottom:2px solid #ccc;padding:3px 8px;text-align:left;white-space:nowrap}
th.lane-head{border-top:4px solid hsl(var(--hue),60%,50%)}
table.steps td{padding:2px 8px;border-bottom:1px solid #eee;vertical-align:top}
td.num{text-align:right;color:#777;white-space:nowrap}
td.p{white-space:nowrap}
td.lane{min-width:150px;overflow-wrap:break-word;border-left:1px dashed #e4e4e4}
td.lane.on{background:hsl(var(--hue),70%,94%);border-left:3px solid hsl(var(--hue),60%,50%)}
.op{font-weight:600}
.obj{color:#2c3e50}
.detail{color:#8e44ad}
.site{color:#888;font-size:11px}
.log{color:#16a085}
.state{color:#555;font-size:11px}
.state .obj{color:#2c3e50}
tr.step{cursor:pointer}
tr.step:hover td{background-color:#f3f7fb}
tr.step.sel td{outline:2px solid #3498db;outline-offset:-2px}
tr.preempt td{border-top:2px solid #e67e22}
.pmark{display:inline-block;margin-left:4px;padding:0 3px;border-radius:3px;background:#e67e22;color:#fff;font-size:10px}
tr.failing td.lane.on{background:#f9d6d1}
#panel{position:sticky;top:8px;width:300px;flex:none;background:#fff;border:1px solid #ddd;border-radius:4px;padding:8px 12px;max-height:95vh;overflow:auto}
#panel h2{font-size:15px;margin:2px 0 6px}
#panel dl{display:grid;grid-template-columns:max-content 1fr;gap:2px 8px;margin:0 0 8px;font-family:monospace;font-size:12px}
#panel dt{font-weight:600}
#panel dd{margin:0;word-break:break-word;white-space:pre-wrap}
#panel table{border-collapse:collapse;font-family:monospace;font-size:11px;width:100%}
#panel td,#panel th{border-bottom:1px solid #eee;padding:2px 4px;text-align:left;vertical-align:top}
.hint{color:#777;font-size:12px}
#wr-errors{color:#c0392b;padding:8px 16px}
"#;

/// Runs first: any script error of the page is written into the DOM (the
/// tests read it from headless Chromium's dump).
const ERROR_JS: &str = r#"
window.onerror=function(msg,src,line,col){
  var b=document.body;
  if(b){b.setAttribute('data-errors',String(Number(b.getAttribute('data-errors')||0)+1));
    var pre=document.getElementById('wr-errors');
    if(pre){pre.hidden=false;pre.textContent+=String(msg)+' at '+line+':'+col+'\n';}}
  else{window.__wrEarlyErrors=(window.__wrEarlyErrors||0)+1;}
};
"#;

/// Makes steps clickable: the step record and, for every object the
/// interleaving touched up to that step, its state then (each step records
/// only the objects it touched; the state of the others is carried forward
/// from the last step that touched them, so the page stays linear in the
/// trace) and the last operation on it. `#step=N` (`#section=S&step=N`)
/// in the address clicks row N. Guest strings only ever reach the DOM
/// through `textContent`.
const MAIN_JS: &str = r#"
(function(){
  var data=JSON.parse(document.getElementById('wr-data').textContent);
  var panel=document.getElementById('panel');
  function el(tag,text,cls){var e=document.createElement(tag);if(text!==undefined&&text!==null)e.textContent=String(text);if(cls)e.className=cls;return e;}
  function dl(pairs){var d=el('dl');pairs.forEach(function(p){if(p[1]===undefined||p[1]===null||p[1]==='')return;d.appendChild(el('dt',p[0]));d.appendChild(el('dd',p[1]));});return d;}
  function probability(sec,k){var ps=sec.probability||[];for(var i=0;i<ps.length;i++){if(ps[i][0]===k)return (ps[i][2]?'= ':'~ ')+ps[i][1].toFixed(2);}return null;}
  function show(si,k,row){
    var sec=data.sections[si],e=sec.trace[k];
    Array.prototype.forEach.call(document.querySelectorAll('tr.step.sel'),function(r){r.classList.remove('sel');});
    if(row)row.classList.add('sel');
    panel.textContent='';
    panel.appendChild(el('h2','step '+e.step+' of '+sec.trace.length));
    panel.appendChild(dl([['thread',e.thread],['operation',e.op],['object',e.object],['detail',e.detail],['source',e.site],
      ['preempted',e.preemption?'yes: a switch away from a thread that could have continued':''],
      ['P after',probability(sec,k+1)],['logs',(e.logs||[]).join('\n')]]));
    panel.appendChild(el('h2','objects up to this step'));
    var last={},state={},order=[],cut=null;
    function seen(o){if(!(o in last)&&!(o in state))order.push(o);}
    for(var i=0;i<=k;i++){var s=sec.trace[i];
      if(s.state_cut&&cut===null)cut=s.step;
      if(s.object){seen(s.object);last[s.object]=s;}
      (s.state||[]).forEach(function(v){seen(v.object);state[v.object]=v.value;});}
    panel.appendChild(el('p',cut===null?'each object\'s state after this step, and the last step that operated on it':
      'states from step '+cut+' on were not recorded (the --max-log-kib budget was spent): those shown are the last recorded','hint'));
    var t=el('table',null,'objects'),h=el('tr');['object','state','last operation'].forEach(function(x){h.appendChild(el('th',x));});t.appendChild(h);
    order.forEach(function(o){var s=last[o],r=el('tr');r.appendChild(el('td',o));r.appendChild(el('td',o in state?state[o]:'',
      'value'));r.appendChild(el('td',s?s.step+' '+s.thread+' '+s.op+(s.detail?' '+s.detail:''):''));t.appendChild(r);});
    if(order.length===0){var r=el('tr');r.appendChild(el('td','none yet'));t.appendChild(r);}
    panel.appendChild(t);
  }
  function fromAddress(){
    var q={};(location.hash||'').replace(/^#/,'').split('&').forEach(function(p){var kv=p.split('=');q[kv[0]]=kv[1];});
    if(q.step===undefined)return false;
    var secEl=document.querySelector('section.test[data-section="'+Number(q.section||0)+'"]');
    var row=secEl&&secEl.querySelector('tr.step[data-index="'+(Number(q.step)-1)+'"]');
    if(!row)return false;
    row.click();row.scrollIntoView({block:'center'});
    return true;
  }
  Array.prototype.forEach.call(document.querySelectorAll('section.test'),function(secEl){
    var si=Number(secEl.getAttribute('data-section'));
    var rows=secEl.querySelectorAll('tr.step');
    Array.prototype.forEach.call(rows,function(row){
      var k=Number(row.getAttribute('data-index'));
      row.addEventListener('click',function(){show(si,k,row);});
      row.addEventListener('keydown',function(ev){if(ev.key==='Enter'||ev.key===' '){ev.preventDefault();show(si,k,row);}});
    });
    secEl.setAttribute('data-lanes',String(secEl.querySelectorAll('th.lane-head').length));
    secEl.setAttribute('data-rows',String(rows.length));
  });
  var first=null;
  for(var i=0;i<data.sections.length&&first===null;i++){if(data.sections[i].trace.length>0)first=i;}
  if(first!==null&&!fromAddress()){
    var secEl=document.querySelector('section.test[data-section="'+first+'"]');
    var sel=secEl.querySelector('tr.step.failing')||secEl.querySelector('tr.step:last-child');
    show(first,Number(sel.getAttribute('data-index')),sel);
  }
  var b=document.body;
  if(window.__wrEarlyErrors)b.setAttribute('data-errors',String(Number(b.getAttribute('data-errors'))+window.__wrEarlyErrors));
  b.setAttribute('data-lanes',String(document.querySelectorAll('th.lane-head').length));
  b.setAttribute('data-rows',String(document.querySelectorAll('tr.step').length));
  b.setAttribute('data-steps',String(data.sections.reduce(function(n,s){return n+s.trace.length;},0)));
  window.addEventListener('hashchange',fromAddress);
  b.setAttribute('data-ready','1');
})();
"#;

#[cfg(test)]
mod tests {
    use super::*;
    use wasmrace_trace::{FailureKind, ObjectValue};

    fn event(step: u32, thread: &str, op: &str) -> TraceEvent {
        TraceEvent {
            step,
            thread: thread.into(),
            op: op.into(),
            object: Some("cell main#0".into()),
            detail: "-> 0".into(),
            site: Some("src/lib.rs:3:5".into()),
            preemption: false,
            logs: Vec::new(),
            state: Vec::new(),
            state_cut: false,
        }
    }

    fn lost_update() -> (Vec<TraceEvent>, Failure) {
        let mut trace = vec![
            event(1, "main", "cell.new"),
            event(2, "main", "spawn"),
            event(3, "main", "spawn"),
            event(4, "main.1", "cell.get"),
            event(5, "main.2", "cell.get"),
            event(6, "main.2", "cell.set"),
            event(7, "main.1", "cell.set"),
            event(8, "main", "cell.get"),
        ];
        trace[4].preemption = true;
        trace[7].logs.push("total = 1".into());
        let f = Failure::new(FailureKind::Panic, Some("main".into()), "lost");
        (trace, f)
    }

    fn page<'a>(s: Section<'a>) -> String {
        render(&Page {
            command: "check",
            module: "app.wasm",
            sections: vec![s],
        })
    }

    fn count(haystack: &str, needle: &str) -> usize {
        haystack.matches(needle).count()
    }

    #[test]
    fn one_lane_per_thread_and_one_row_per_step() {
        let (trace, f) = lost_update();
        let html = page(Section {
            test: "lost_update",
            failure: Some(&f),
            trace: &trace,
            ..Section::default()
        });
        assert_eq!(count(&html, "<th class=\"lane-head\""), 3);
        assert_eq!(count(&html, "<tr class=\"step"), trace.len());
        // Each row fills exactly one lane, the thread's.
        assert_eq!(count(&html, "<td class=\"lane on\""), trace.len());
        assert_eq!(count(&html, "<td class=\"lane\">"), trace.len() * 2);
        assert!(html.contains("data-lane-count=\"3\" data-step-count=\"8\""));
        assert_eq!(count(&html, "<tr class=\"step preempt\""), 1);
        assert_eq!(count(&html, "failing\""), 1, "main's last step fails");
        assert!(html.contains("<div class=\"log\">log: total = 1</div>"));
        assert!(html.contains("<div class=\"site\">src/lib.rs:3:5</div>"));
        assert_eq!(lanes(&trace, Some(&f)), ["main", "main.1", "main.2"]);
    }

    #[test]
    fn rows_show_the_state_of_what_they_touched_and_where_it_was_cut() {
        let (mut trace, f) = lost_update();
        trace[5].state = vec![ObjectValue {
            object: "cell main#0".into(),
            value: "value = 1".into(),
        }];
        let html = page(Section {
            test: "lost_update",
            failure: Some(&f),
            trace: &trace,
            ..Section::default()
        });
        assert_eq!(
            count(
                &html,
                "<div class=\"state\"><span class=\"obj\">cell main#0</span>: value = 1</div>"
            ),
            1
        );
        assert!(!html.contains("state-cut"));
        trace[6].state_cut = true;
        let html = page(Section {
            test: "lost_update",
            failure: Some(&f),
            trace: &trace,
            ..Section::default()
        });
        assert!(html.contains("object states are shown up to step 6"));
    }

    #[test]
    fn a_failing_thread_without_steps_still_gets_its_lane() {
        let f = Failure::new(FailureKind::Trap, Some("main".into()), "unreachable");
        assert_eq!(lanes(&[], Some(&f)), ["main"]);
        let html = page(Section {
            test: "t",
            failure: Some(&f),
            ..Section::default()
        });
        assert!(html.contains("no steps"));
        assert_eq!(count(&html, "<tr class=\"step"), 0);
    }

    const HOSTILE: &str =
        "</script><script>alert(1)</script><img src=x onerror=alert(2)>\"'&\u{2028}";

    #[test]
    fn guest_strings_are_escaped_everywhere() {
        let (mut trace, mut f) = lost_update();
        for e in &mut trace {
            e.thread = format!("{}{HOSTILE}", e.thread);
            e.op = HOSTILE.into();
            e.object = Some(HOSTILE.into());
            e.detail = HOSTILE.into();
            e.site = Some(HOSTILE.into());
            e.logs = vec![HOSTILE.into()];
            e.state = vec![ObjectValue {
                object: HOSTILE.into(),
                value: HOSTILE.into(),
            }];
        }
        f.thread = Some(HOSTILE.into());
        f.message = HOSTILE.into();
        f.location = Some(HOSTILE.into());
        let curve = Curve {
            points: vec![(0, 0.5, false), (1, 1.0, true)],
            sealed: Some((1, true)),
            decisive: vec![(1, HOSTILE.into())],
        };
        let html = render(&Page {
            command: "check",
            module: HOSTILE,
            sections: vec![Section {
                test: HOSTILE,
                notes: vec![HOSTILE.into()],
                failure: Some(&f),
                trace: &trace,
                curve: Some(curve),
            }],
        });
        // The page's own elements only: three scripts, one image-free body.
        assert_eq!(count(&html, "<script"), 3, "{html}");
        assert_eq!(count(&html, "</script>"), 3);
        assert_eq!(count(&html, "<img"), 0);
        // Every `onerror` is the page's own handler or inert text.
        for (at, _) in html.match_indices("onerror") {
            let before = &html[at.saturating_sub(16)..at];
            assert!(
                before.ends_with("window.")
                    || before.ends_with("&lt;img src=x ")
                    || before.ends_with("u003cimg src=x "),
                "{before:?}"
            );
        }
        assert!(html.contains("&lt;img src=x onerror=alert(2)&gt;&quot;&#39;&amp;"));
        // The embedded JSON still holds the strings, escaped for a script.
        let start = html.find("id=\"wr-data\">").unwrap() + "id=\"wr-data\">".len();
        let end = start + html[start..].find("</script>").unwrap();
        let json: serde_json::Value = serde_json::from_str(&html[start..end]).unwrap();
        assert_eq!(json["sections"][0]["test"], HOSTILE);
        assert_eq!(json["sections"][0]["trace"][0]["logs"][0], HOSTILE);
        assert!(!html[start..end].contains('\u{2028}'));
    }

    #[test]
    fn bisect_pages_draw_the_curve_beside_the_steps() {
        let (trace, f) = lost_update();
        let points = (0..=trace.len())
            .map(|k| (k, k as f64 / trace.len() as f64, k > 4))
            .collect();
        let html = page(Section {
            test: "lost_update",
            failure: Some(&f),
            trace: &trace,
            curve: Some(Curve {
                points,
                sealed: Some((5, false)),
                decisive: vec![(5, "step 5: main.2 ran cell.get".into())],
            }),
            ..Section::default()
        });
        assert_eq!(count(&html, "<polyline"), 1);
        assert_eq!(count(&html, "<circle"), trace.len() + 1);
        assert!(html.contains("sealed at 5 (est.)"));
        // A P bar in every row.
        assert_eq!(count(&html, "<td class=\"p\"><svg"), trace.len());
        assert!(html.contains("=1.00</td>"));
    }

    #[test]
    fn script_json_cannot_close_its_element() {
        let v = serde_json::json!({"a": "</script><!--&\u{2029}"});
        let s = script_json(&v);
        assert!(!s.contains('<') && !s.contains('>') && !s.contains('&'));
        assert_eq!(serde_json::from_str::<serde_json::Value>(&s).unwrap(), v);
        assert_eq!(
            esc("<a href='x'>&\"</a>\0"),
            "&lt;a href=&#39;x&#39;&gt;&amp;&quot;&lt;/a&gt;\u{fffd}"
        );
    }
}
