/**
 * The escape page's script (plain browser JavaScript, no framework, served as a same-origin file
 * so that CSP `default-src 'self'` holds). It decides where proofs come from by a relative probe:
 * a `manifest.json` beside the page is an escape kit (static files in the kit's layout), else the
 * page is served by a member's escape API (`v1/escape/info`, `v1/escape/{tree}/{id}`). It shows the
 * call data exactly as the proof carries it; the one call it builds itself, `withdraw`, is a
 * selector and two words. Written without template literals: it lives in one.
 */
export const PAGE_JS = `"use strict";
(function () {
  var KIT_FORMAT = "dacd-escape-kit/1";
  // keccak256("withdraw(uint256,uint256)")[0..4]
  var WITHDRAW_SELECTOR = "441a3e70";
  var info = null;
  var $ = function (id) { return document.getElementById(id); };

  function text(el, s) { el.textContent = s; return el; }
  function make(tag, s, cls) {
    var el = document.createElement(tag);
    if (s !== undefined) el.textContent = s;
    if (cls) el.className = cls;
    return el;
  }
  function status(s, isError) {
    var el = $("status");
    el.textContent = s;
    el.className = isError ? "error" : "";
  }
  function shardOf(id) {
    var s = id;
    while (s.length < 3) s = "0" + s;
    return s.slice(-3);
  }
  function word(hex) {
    var h = hex.replace(/^0x/, "");
    while (h.length < 64) h = "0" + h;
    return h;
  }

  function getJson(url) {
    return fetch(url, { headers: { accept: "application/json" } }).then(function (res) {
      return res.text().then(function (body) {
        var json = null;
        try { json = JSON.parse(body); } catch (e) { json = null; }
        return { status: res.status, json: json };
      });
    });
  }

  function load() {
    return getJson("manifest.json").then(function (m) {
      if (m.status === 200 && m.json && m.json.format === KIT_FORMAT) {
        var k = m.json;
        return {
          mode: "kit",
          tree: k.tree,
          batchId: k.batch_id,
          root: k.root,
          contracts: k.escape_contracts,
          proofUrl: function (id) { return k.tree + "/" + shardOf(id) + "/" + id + ".json"; },
          rootSource: "the kit's manifest (batch " + k.batch_id + ")"
        };
      }
      return getJson("v1/escape/info").then(function (a) {
        if (a.status !== 200 || !a.json) throw new Error("no escape kit or escape API found beside this page");
        var i = a.json;
        return {
          mode: "api",
          tree: i.tree,
          batchId: i.batch_id,
          root: i.root,
          contracts: i.escape_contracts,
          proofUrl: function (id) { return "v1/escape/" + i.tree + "/" + id; },
          rootSource: "this member's latest signed batch (" + i.batch_id + ")"
        };
      });
    });
  }

  function copyButton(area) {
    var b = make("button", "Copy", "copy");
    b.type = "button";
    b.addEventListener("click", function () {
      var done = function () { text(b, "Copied"); setTimeout(function () { text(b, "Copy"); }, 1500); };
      if (navigator.clipboard && window.isSecureContext) {
        navigator.clipboard.writeText(area.value).then(done, function () { area.select(); });
      } else {
        area.focus();
        area.select();
        try { if (document.execCommand("copy")) done(); } catch (e) { /* selected for a manual copy */ }
      }
    });
    return b;
  }

  function step(title, address, addressName, what, data, dataName) {
    var li = make("li");
    li.appendChild(make("h3", title));
    if (address) {
      var p = make("p");
      p.appendChild(document.createTextNode(addressName + ": "));
      p.appendChild(make("code", address));
      li.appendChild(p);
    } else {
      li.appendChild(make("p", addressName + ": ask the operator or the exchange's documentation (not configured here).", "muted"));
    }
    li.appendChild(make("p", what));
    if (data !== undefined) {
      var area = make("textarea");
      area.readOnly = true;
      area.value = data;
      area.setAttribute("aria-label", dataName);
      area.setAttribute("data-call", dataName);
      li.appendChild(area);
      li.appendChild(copyButton(area));
    }
    return li;
  }

  function row(dl, name, value) {
    dl.appendChild(make("dt", name));
    dl.appendChild(make("dd", value));
  }

  function show(proof) {
    var spot = proof.format === "starkex-escape-spot/1";
    var dl = $("leaf");
    dl.textContent = "";
    var c = info.contracts || {};
    var steps = $("steps");
    steps.textContent = "";
    var root = spot ? proof.vault_root : proof.position_root;
    if (spot) {
      text($("leaf-title"), "Vault " + proof.vault_id + (proof.empty ? " (empty)" : ""));
      row(dl, "Stark key", proof.stark_key);
      row(dl, "Asset id", proof.asset_id);
      row(dl, "Balance (quantized)", proof.quantized_amount);
      row(dl, "Batch", String(proof.batch_id));
      steps.appendChild(step("verifyEscape on the escape verifier", c.verifier, "Verifier",
        "Checks the Merkle path of your vault against the root and records the fact (about 1.05M gas). Anyone may send it.",
        proof.calldata.verify_escape, "verify_escape"));
      steps.appendChild(step("escape on the exchange", c.exchange, "Exchange",
        "Checks that fact against the exchange's frozen root and credits the balance to your stark key (once per vault).",
        proof.calldata.escape, "escape"));
      steps.appendChild(step("withdraw on the exchange", c.exchange, "Exchange",
        "Pays the credited amount out, from the Ethereum address registered for your stark key. The call data below is for ETH and ERC-20 assets, whose asset type is the asset id; for other assets use the exchange's withdrawal for them.",
        "0x" + WITHDRAW_SELECTOR + word(proof.stark_key) + word(proof.asset_id), "withdraw"));
    } else {
      text($("leaf-title"), "Position " + proof.position_id + (proof.empty ? " (empty)" : ""));
      row(dl, "Public key", proof.public_key);
      row(dl, "Collateral balance", proof.collateral_balance);
      for (var i = 0; i < proof.assets.length; i++) {
        var a = proof.assets[i];
        row(dl, "Asset " + a.asset_id, "balance " + a.balance + ", funding index " + a.cached_funding_index);
      }
      row(dl, "Batch", String(proof.batch_id));
      if (proof.withdrawal_amount !== undefined) row(dl, "Withdrawal amount (collateral)", proof.withdrawal_amount);
      if (proof.calldata) {
        steps.appendChild(step("verifyEscape on the escape verifier", c.verifier, "Verifier",
          "Checks your position against the frozen shared state and records the fact for " + proof.withdrawal_amount + " (about 2.2 to 2.4M gas). Anyone may send it.",
          proof.calldata.verify_escape, "verify_escape"));
        steps.appendChild(step("escape on the exchange", c.exchange, "Exchange",
          "Checks that fact against the exchange's shared state and credits the amount to your public key (once per position).",
          proof.calldata.escape, "escape"));
        steps.appendChild(step("withdraw on the exchange", c.exchange, "Exchange",
          "Pays the collateral out to the Ethereum address registered for your public key.",
          proof.calldata.withdraw, proof.calldata.withdraw ? "withdraw" : ""));
      } else {
        steps.appendChild(step("verifyEscape on the escape verifier", c.verifier, "Verifier",
          "verifyEscape(merkleProof, nAssets = " + proof.n_assets + ", sharedState) (about 2.2 to 2.4M gas). merkleProof is below; " + proof.note,
          JSON.stringify(proof.merkle_proof), "merkle_proof"));
        steps.appendChild(step("escape on the exchange", c.exchange, "Exchange",
          "With your public key, position id " + proof.position_id + " and the withdrawable amount the verifier computed from the shared state.",
          undefined, ""));
        steps.appendChild(step("withdraw on the exchange", c.exchange, "Exchange",
          "Pays the collateral out to the Ethereum address registered for your public key.", undefined, ""));
      }
    }
    var check = $("root-check");
    check.textContent = "";
    check.appendChild(document.createTextNode("The proof's root: "));
    check.appendChild(make("code", root));
    check.appendChild(document.createTextNode(". Root of " + info.rootSource + ": "));
    check.appendChild(make("code", info.root));
    check.appendChild(document.createTextNode(" "));
    var same = info.root && root.toLowerCase() === info.root.toLowerCase();
    check.appendChild(make("span", same ? "they match." : "they differ: this proof is for another batch.", same ? "ok" : "bad"));
    check.appendChild(document.createTextNode(" Compare it with the exchange's frozen root (" +
      (spot ? "getValidiumVaultRoot()" : "the position root of its shared state") +
      " on the exchange contract): the escape succeeds only if they are equal."));
    $("result").hidden = false;
  }

  function lookup(ev) {
    ev.preventDefault();
    var id = $("leaf-id").value.trim();
    if (!/^(0|[1-9][0-9]{0,19})$/.test(id)) { status("Enter the id as a whole number, like 12345.", true); return; }
    if (!info) { status("Not ready: no proofs found beside this page.", true); return; }
    $("result").hidden = true;
    status("Fetching the proof of " + info.tree + " " + id + "…");
    getJson(info.proofUrl(id)).then(function (r) {
      if (r.status === 200 && r.json) { status(""); show(r.json); return; }
      if (r.status === 404 && info.mode === "kit")
        status("No " + info.tree + " " + id + " in this kit: it holds only non-empty " + info.tree + "s (an empty one has nothing to withdraw).", true);
      else status((r.json && r.json.error) || ("The proof could not be fetched (status " + r.status + ")."), true);
    }, function (e) { status("The proof could not be fetched: " + e.message, true); });
  }

  document.addEventListener("DOMContentLoaded", function () {
    $("lookup").addEventListener("submit", lookup);
    load().then(function (i) {
      info = i;
      var name = i.tree === "position" ? "Position id" : "Vault id";
      text($("leaf-label"), name);
      text($("source"), "Proofs for batch " + i.batchId + ", " + (i.mode === "kit" ? "from a published escape kit." : "from a committee member's escape API."));
      document.body.setAttribute("data-ready", i.mode);
    }, function (e) { text($("source"), e.message); document.body.setAttribute("data-ready", "none"); });
  });
})();
`;
