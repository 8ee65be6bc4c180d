/** The escape page: markup only; its style and script are same-origin files (CSP `default-src 'self'`). */
export const PAGE_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Leave the frozen exchange: your escape proof</title>
<link rel="stylesheet" href="escape.css">
<script src="escape.js" defer></script>
</head>
<body>
<main>
<h1>Take your money out of the exchange</h1>
<p id="source" class="muted">Loading…</p>
<section id="wallet" class="panel" aria-label="Wallet"></section>
<form id="lookup" autocomplete="off">
<label for="leaf-id" id="leaf-label">Your vault id, stark key or Ethereum address</label>
<div class="row">
<input id="leaf-id" name="id" maxlength="80" spellcheck="false" required>
<button type="submit">Find</button>
</div>
</form>
<details id="open-file" class="panel">
<summary>Have the kit or a proof file on your disk? Open it</summary>
<p class="muted">Nothing is uploaded: the page reads the files in your browser.</p>
<label for="kit-folder">The escape kit's folder (the one with manifest.json)</label>
<input id="kit-folder" type="file" webkitdirectory multiple>
<label for="proof-file">Or your proof file (and the kit's manifest.json, for the contracts)</label>
<input id="proof-file" type="file" accept=".json,application/json" multiple>
</details>
<details id="contracts" class="panel">
<summary>The exchange's contracts</summary>
<p id="contracts-note" class="muted"></p>
<label for="exchange">Exchange contract</label>
<input id="exchange" spellcheck="false" placeholder="0x…">
<label for="verifier">Escape verifier contract</label>
<input id="verifier" spellcheck="false" placeholder="0x…">
<label for="chain-id">Chain id</label>
<input id="chain-id" inputmode="numeric" placeholder="1 for Ethereum">
</details>
<p id="status" role="status"></p>
<div id="matches"></div>
<section id="result" hidden>
<h2 id="leaf-title">Your vault</h2>
<p id="where" class="where" role="status" hidden></p>
<p id="batch-warning" class="warning" hidden></p>
<dl id="leaf"></dl>
<h2>Is this the frozen state?</h2>
<p id="root-check"></p>
<h2 id="steps-title">Your way out, step by step</h2>
<p><button type="button" id="recheck" class="secondary">Check again</button> <span class="muted">reads the exchange again (after a transaction, or once the waiting time has passed)</span></p>
<p id="steps-none" class="warning" hidden>There is nothing to withdraw here (an empty balance), so there is no transaction to send.</p>
<ul id="plan-notes" class="muted"></ul>
<ol id="steps"></ol>
<div id="downloads" class="actions">
<button type="button" id="download-proof">Download the proof file</button>
<button type="button" id="download-safe">Download the steps for a Safe (Transaction Builder)</button>
</div>
<p class="muted">You can check the proof yourself with <code>dacd verify-proof FILE --root 0x…</code> (no store needed) before you pay for gas.</p>
</section>
</main>
</body>
</html>
`;
