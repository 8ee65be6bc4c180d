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
<h1>Your escape proof</h1>
<p id="source" class="muted">Loading…</p>
<form id="lookup" autocomplete="off">
<label for="leaf-id" id="leaf-label">Vault id</label>
<div class="row">
<input id="leaf-id" name="id" inputmode="numeric" pattern="[0-9]*" maxlength="20" required>
<button type="submit">Get proof</button>
</div>
</form>
<p id="status" role="status"></p>
<section id="result" hidden>
<h2 id="leaf-title">Your vault</h2>
<dl id="leaf"></dl>
<h2>Is this the frozen state?</h2>
<p id="root-check"></p>
<h2>Three transactions</h2>
<ol id="steps"></ol>
<p class="muted">Check the proof yourself with <code>dacd verify-proof FILE --root 0x…</code> (no store needed) before you pay for gas.</p>
</section>
</main>
</body>
</html>
`;
