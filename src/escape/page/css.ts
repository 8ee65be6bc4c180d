/** The escape page's style: one column, readable on a phone, long hex wrapped with a copy button. */
export const PAGE_CSS = `*{box-sizing:border-box}
[hidden]{display:none!important}
body{margin:0;font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1b1f24;background:#f6f7f9}
main{max-width:52rem;margin:0 auto;padding:1rem}
h1{font-size:1.5rem;margin:.5rem 0}
h2{font-size:1.15rem;margin:1.5rem 0 .5rem}
.muted{color:#57606a;font-size:.9rem}
.panel{background:#fff;border:1px solid #d0d7de;border-radius:8px;padding:.5rem .75rem;margin:.75rem 0}
.panel:empty{display:none}
summary{cursor:pointer;font-weight:600}
label{display:block;font-weight:600;margin:.75rem 0 .25rem}
.row{display:flex;gap:.5rem}
input{width:100%;min-width:0;font-size:1rem;padding:.55rem;border:1px solid #8c959f;border-radius:6px;font-family:ui-monospace,SFMono-Regular,Menlo,monospace}
.row input{flex:1}
input[type=file]{font-family:inherit;border:0;padding:.25rem 0}
button{font-size:1rem;padding:.55rem 1rem;border:0;border-radius:6px;background:#0b5cad;color:#fff;cursor:pointer}
button.secondary{background:#24292f}
button:disabled{background:#8c959f;cursor:not-allowed}
button:focus,input:focus{outline:3px solid #f0b400;outline-offset:1px}
#wallet button,#matches button{margin:.25rem .5rem .25rem 0}
dl{display:grid;grid-template-columns:minmax(7rem,12rem) minmax(0,1fr);gap:.35rem .75rem;margin:0}
dt{font-weight:600}
dd{margin:0;min-width:0}
code,.hex{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:.85rem;overflow-wrap:anywhere;word-break:break-all}
.hexrow{display:flex;align-items:flex-start;gap:.5rem;min-width:0}
.hexrow .hex{flex:1;min-width:0}
.asset{display:flex;flex-direction:column;gap:.1rem}
.copy{flex:none;font-size:.8rem;padding:.2rem .55rem;background:#24292f}
ol{padding-left:0;list-style:none;counter-reset:step}
li.step{counter-increment:step;background:#fff;border:1px solid #d0d7de;border-left:6px solid #d0d7de;border-radius:8px;padding:.6rem .8rem;margin-bottom:1rem}
li.s-done{border-left-color:#1a7f37;background:#f3fbf5}
li.s-next{border-left-color:#0b5cad}
li.s-waiting{border-left-color:#bf8700}
.step-head{display:flex;align-items:center;gap:.5rem;flex-wrap:wrap}
.step-head h3{font-size:1.05rem;margin:0}
.step-head h3::before{content:counter(step) ". "}
.badge{font-size:.8rem;font-weight:700;padding:.05rem .5rem;border-radius:1rem;background:#eaeef2}
.b-done{background:#1a7f37;color:#fff}.b-next{background:#0b5cad;color:#fff}.b-waiting{background:#bf8700;color:#fff}
.to{display:flex;flex-wrap:wrap;gap:.25rem .5rem;align-items:flex-start}
.to .hexrow{flex:0 1 auto}
.fn{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:.8rem;color:#57606a;overflow-wrap:anywhere}
textarea{width:100%;height:5.5rem;font:12px/1.4 ui-monospace,SFMono-Regular,Menlo,monospace;word-break:break-all;padding:.4rem;border:1px solid #8c959f;border-radius:6px;background:#fff}
.actions{display:flex;flex-wrap:wrap;gap:.5rem;margin:.35rem 0}
.actions .copy{font-size:.9rem;padding:.45rem .8rem}
.tx{margin:.25rem 0 0;overflow-wrap:anywhere;font-size:.9rem}
.tx:empty{display:none}
.note{font-weight:600;color:#7d4e00}
.where{background:#ddf4ff;border:1px solid #54aeff;border-radius:8px;padding:.5rem .75rem;font-weight:600}
.warning{background:#fff8c5;border:1px solid #d4a72c;border-radius:8px;padding:.5rem .75rem}
.ok{color:#116329;font-weight:600}
.bad{color:#a40e26;font-weight:600}
#status.error{color:#a40e26}
@media (max-width:36rem){main{padding:.6rem}dl{grid-template-columns:minmax(0,1fr)}dt{margin-top:.35rem}.row{flex-wrap:wrap}.row button{flex:1 0 100%}}
`;
