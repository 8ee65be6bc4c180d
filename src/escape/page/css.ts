/** The escape page's style: one column, readable on a phone, long hex wrapped. */
export const PAGE_CSS = `*{box-sizing:border-box}
body{margin:0;font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1b1f24;background:#f6f7f9}
main{max-width:46rem;margin:0 auto;padding:1rem}
h1{font-size:1.5rem;margin:.5rem 0}
h2{font-size:1.15rem;margin:1.5rem 0 .5rem}
.muted{color:#57606a;font-size:.9rem}
label{display:block;font-weight:600;margin:.75rem 0 .25rem}
.row{display:flex;gap:.5rem}
input{flex:1;min-width:0;font-size:1.1rem;padding:.6rem;border:1px solid #8c959f;border-radius:6px}
button{font-size:1rem;padding:.6rem 1rem;border:0;border-radius:6px;background:#0b5cad;color:#fff;cursor:pointer}
button:focus,input:focus{outline:3px solid #f0b400;outline-offset:1px}
dl{display:grid;grid-template-columns:max-content 1fr;gap:.25rem .75rem;margin:0}
dt{font-weight:600}
dd{margin:0;word-break:break-all;font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:.9rem}
ol{padding-left:1.25rem}
li{margin-bottom:1.25rem}
li h3{font-size:1rem;margin:0 0 .25rem}
textarea{width:100%;height:6.5rem;font:12px/1.4 ui-monospace,SFMono-Regular,Menlo,monospace;word-break:break-all;padding:.4rem;border:1px solid #8c959f;border-radius:6px;background:#fff}
.copy{margin-top:.25rem;background:#24292f}
.ok{color:#116329;font-weight:600}
.bad{color:#a40e26;font-weight:600}
#status.error{color:#a40e26}
code{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:.9em;word-break:break-all}
@media (max-width:30rem){dl{grid-template-columns:1fr}dd{margin-bottom:.4rem}}
`;
