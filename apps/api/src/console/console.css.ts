/** The console's one stylesheet, served at `/app/assets/console.css` (no build step). */
export const CONSOLE_CSS = `
:root{--bg:#f6f7fb;--card:#fff;--ink:#1b2130;--muted:#4f5b70;--line:#d8dde7;--accent:#1f4fd1;--accent-ink:#fff;
--ok:#0d6b3d;--ok-bg:#e3f5ea;--warn:#7a4b00;--warn-bg:#fff2d6;--bad:#a1141f;--bad-bg:#fde7e9;--focus:#ffb020;
font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--ink);background:var(--bg)}
*{box-sizing:border-box}
body{margin:0}
a{color:var(--accent)}
a:hover{text-decoration-thickness:2px}
:focus-visible{outline:3px solid var(--focus);outline-offset:2px}
.skip{position:absolute;left:-999px;top:0;background:var(--ink);color:#fff;padding:.5rem 1rem;z-index:10}
.skip:focus{left:.5rem;top:.5rem}
.top{display:flex;flex-wrap:wrap;gap:1rem 2rem;align-items:center;padding:.75rem 1.5rem;background:var(--ink);color:#fff}
.top a{color:#fff;text-decoration:none}
.top a:hover,.top a[aria-current=page]{text-decoration:underline;text-underline-offset:.3em}
.brand{font-weight:700;font-size:1.15rem}
.top nav{display:flex;gap:1.25rem;flex:1}
.signout{display:flex;gap:.75rem;align-items:center;margin:0}
.who{color:#cfd6e4;font-size:.9rem}
main{max-width:68rem;margin:0 auto;padding:1.5rem}
main:focus{outline:none}
h1{font-size:1.6rem;margin:.5rem 0 1rem}
h2{font-size:1.2rem;margin:1.75rem 0 .75rem}
h3{font-size:1.05rem;margin:1.25rem 0 .5rem}
.lead{font-size:1.05rem;color:var(--muted)}
.muted{color:var(--muted)}
.card{background:var(--card);border:1px solid var(--line);border-radius:10px;padding:1.25rem;margin:1rem 0}
.narrow{max-width:26rem;margin:3rem auto}
.grid{display:grid;grid-template-columns:repeat(auto-fit,minmax(16rem,1fr));gap:1rem}
table{border-collapse:collapse;width:100%;background:var(--card)}
th,td{text-align:left;padding:.55rem .6rem;border-bottom:1px solid var(--line);vertical-align:top}
th{font-size:.85rem;text-transform:uppercase;letter-spacing:.03em;color:var(--muted)}
tbody th{text-transform:none;letter-spacing:normal;font-size:inherit;color:inherit}
caption{text-align:left;font-weight:600;padding:.4rem 0}
label{display:block;font-weight:600;margin:.9rem 0 .3rem}
.field-error{display:block;color:var(--bad);font-weight:600;margin:.2rem 0 .3rem}
.hint{display:block;font-weight:400;font-size:.9rem;color:var(--muted)}
input[type=text],input[type=email],input[type=password],input[type=url],input[type=number],select,textarea{width:100%;max-width:32rem;padding:.55rem .65rem;border:1px solid #8a94a8;border-radius:6px;font:inherit;background:#fff;color:var(--ink)}
fieldset{border:1px solid var(--line);border-radius:8px;padding:.5rem 1rem 1rem;margin:1rem 0}
legend{font-weight:600;padding:0 .3rem}
.choice{display:flex;gap:.5rem;align-items:center;font-weight:400;margin:.35rem 0}
button,.button{display:inline-block;font:inherit;font-weight:600;padding:.55rem 1.1rem;border-radius:6px;border:1px solid var(--accent);background:var(--accent);color:var(--accent-ink);cursor:pointer;text-decoration:none}
button:hover,.button:hover{filter:brightness(1.1)}
button.secondary,.button.secondary{background:#fff;color:var(--accent)}
button.danger,.button.danger{background:var(--bad);border-color:var(--bad);color:#fff}
button.link{background:none;border:none;padding:0;color:inherit;text-decoration:underline;font-weight:400}
button[disabled]{background:#c9ced8;border-color:#c9ced8;color:#4a5160;cursor:not-allowed;filter:none}
.actions form{margin:0}
.actions{display:flex;flex-wrap:wrap;gap:.5rem;align-items:center;margin-top:1rem}
.inline{display:inline}
.notice{background:var(--ok-bg);color:var(--ok);border-left:4px solid var(--ok);padding:.75rem 1rem;border-radius:6px}
.error{background:var(--bad-bg);color:var(--bad);border-left:4px solid var(--bad);padding:.75rem 1rem;border-radius:6px}
.warning{background:var(--warn-bg);color:var(--warn);border-left:4px solid #c98a00;padding:.75rem 1rem;border-radius:6px}
.badge{display:inline-block;font-size:.8rem;font-weight:600;padding:.1rem .55rem;border-radius:999px;background:#e8ebf2;color:var(--ink)}
.badge.ok{background:var(--ok-bg);color:var(--ok)}
.badge.warn{background:var(--warn-bg);color:var(--warn)}
.badge.bad{background:var(--bad-bg);color:var(--bad)}
.secret{font:600 1rem ui-monospace,SFMono-Regular,Menlo,monospace;background:#111827;color:#e6f0ff;padding:.75rem 1rem;border-radius:6px;word-break:break-all;user-select:all}
code{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:.92em;background:#eef1f6;padding:.05em .3em;border-radius:4px}
dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:.35rem 1rem;margin:0}
dl.facts dt{color:var(--muted)}
dl.facts dd{margin:0}
.tabs{display:flex;gap:.25rem;border-bottom:2px solid var(--line);margin:1rem 0}
.tabs a{padding:.5rem 1rem;text-decoration:none;border-radius:6px 6px 0 0;color:var(--ink)}
.tabs a[aria-current=page]{background:var(--card);border:2px solid var(--line);border-bottom-color:var(--card);margin-bottom:-2px;font-weight:600}
progress{width:100%;max-width:24rem;height:1rem}
.arrow{font-weight:700;white-space:nowrap}
.issue{margin:.2rem 0;font-size:.9rem}
.issue-error{color:var(--bad)}
.issue-warning{color:var(--warn)}
.issue-ok{color:var(--ok)}
table.fields select{min-width:9rem}
.visually-hidden{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap}
ul.plain{list-style:none;margin:.2rem 0 0;padding:0}
.needs{font-size:1.1rem}
@media (max-width:40rem){main{padding:1rem}.top{padding:.75rem 1rem}th,td{padding:.45rem .35rem}}
`;
