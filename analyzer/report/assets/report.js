// expert-report: the EXPERT/CUBE presenter's three coupled weighted trees.
//
// Property tree -> call tree -> system tree.  A collapsed node shows its
// inclusive value, an expanded one its exclusive value.  The selected
// property (inclusive if collapsed, exclusive if expanded) weights the call
// tree; the selected call path (its subtree if collapsed, itself if expanded)
// weights the system tree.  Every name is inserted with textContent, never as
// markup, so names from a trace cannot inject anything.
(function () {
  "use strict";
  var D = JSON.parse(document.getElementById("expert-data").textContent);
  var M = D.metrics, NM = M.length, NC = D.cnodes.parent.length, NL = D.nloc, NS = D.sys.length;

  function shape(parents) {
    var ch = parents.map(function () { return []; }), roots = [];
    parents.forEach(function (p, i) { if (p < 0) roots.push(i); else ch[p].push(i); });
    var pre = [], stack = roots.slice().reverse();
    while (stack.length) {
      var n = stack.pop();
      pre.push(n);
      for (var k = ch[n].length - 1; k >= 0; k--) stack.push(ch[n][k]);
    }
    return { ch: ch, roots: roots, pre: pre, parent: parents };
  }
  var T = {
    metric: shape(M.map(function (m) { return m.parent; })),
    call: shape(D.cnodes.parent),
    sys: shape(D.sys.map(function (s) { return s.parent; }))
  };
  function pickMetric() {
    for (var i = 0; i < NM; i++) if (M[i].name === "time") return i;
    return NM ? T.metric.roots[0] : -1;
  }
  var S = {
    sel: { metric: pickMetric(), call: NC ? T.call.roots[0] : -1, sys: NS ? T.sys.roots[0] : -1 },
    open: { metric: {}, call: {}, sys: {} }
  };
  function collapsed(tree, i) { return T[tree].ch[i].length > 0 && !S.open[tree][i]; }

  // ---- values -----------------------------------------------------------
  var metricIncl = M.map(function (m, i) {
    var s = 0, v = D.values[i].v;
    for (var j = 0; j < v.length; j++) s += v[j];
    return s;
  });
  // a difference of sums within rounding of the larger operand is zero (no "-0.000 us")
  var ROUNDING = 1e-9;
  function metricExcl(i) {
    var s = metricIncl[i];
    T.metric.ch[i].forEach(function (k) { s -= metricIncl[k]; });
    return Math.abs(s) <= ROUNDING * Math.abs(metricIncl[i]) ? 0 : s;
  }
  // sparse (cnode*NL + loc) -> value of the selected property
  function metricVector() {
    var map = new Map(), m = S.sel.metric;
    function add(i, sign) {
      var V = D.values[i];
      for (var j = 0; j < V.v.length; j++) {
        var key = V.c[j] * NL + V.l[j];
        map.set(key, (map.get(key) || 0) + sign * V.v[j]);
      }
    }
    if (m < 0) return map;
    add(m, 1);
    if (!collapsed("metric", m) && T.metric.ch[m].length) {
      var base = new Map(map);
      T.metric.ch[m].forEach(function (k) { add(k, -1); });
      base.forEach(function (b, key) {
        if (Math.abs(map.get(key)) <= ROUNDING * Math.abs(b)) map.delete(key);
      });
    }
    return map;
  }
  function subtreeSums(tree, own) {
    var incl = own.slice(), pre = T[tree].pre, parent = T[tree].parent;
    for (var j = pre.length - 1; j >= 0; j--) {
      var n = pre[j];
      if (parent[n] >= 0) incl[parent[n]] += incl[n];
    }
    return incl;
  }
  function inSubtree(tree, root) {
    var flag = new Uint8Array(T[tree].parent.length), stack = [root];
    while (stack.length) {
      var n = stack.pop();
      flag[n] = 1;
      T[tree].ch[n].forEach(function (k) { stack.push(k); });
    }
    return flag;
  }

  // ---- formatting -------------------------------------------------------
  var TIME = { sec: 1, secs: 1, s: 1, seconds: 1, second: 1 };
  var BYTES = { bytes: 1, byte: 1, b: 1 };
  function unitKind(unit) {
    var u = (unit || "").trim().toLowerCase();
    return TIME[u] ? "time" : BYTES[u] ? "bytes" : "other:" + u;
  }
  // the scale of a column: one unit for every value of a kind, chosen by the largest of them
  function scaleFor(kind, ref) {
    var a = Math.abs(ref);
    if (kind === "time") {
      if (a === 0 || a >= 1) return [1, " s"];
      if (a >= 1e-3) return [1e3, " ms"];
      return [1e6, " us"];
    }
    if (kind === "bytes") {
      var units = [[1073741824, " GiB"], [1048576, " MiB"], [1024, " KiB"]];
      for (var k = 0; k < units.length; k++) if (a >= units[k][0]) return [1 / units[k][0], units[k][1]];
      return [1, " B"];
    }
    return null;
  }
  function noNegativeZero(s) { return /^-0(\.0+)?(?![\d.])/.test(s) ? s.slice(1) : s; }
  // decimals of a time column: 3, or up to 6 so that its smallest non-zero value keeps two digits
  function timeDigits(sc, smallest) {
    var x = smallest * sc[0];
    return x > 0 && x < 0.01 ? Math.min(6, Math.ceil(-Math.log10(x)) + 1) : 3;
  }
  // v in `unit`; ref: the largest magnitude of that unit in the same column (default v itself);
  // smallest: the smallest non-zero magnitude there (for the number of decimals)
  function fmt(v, unit, ref, smallest) {
    var kind = unitKind(unit), sc = scaleFor(kind, ref === undefined ? v : ref);
    if (sc) {
      var digits = kind === "bytes" ? (sc[0] === 1 ? 0 : 2) : timeDigits(sc, smallest === undefined ? Math.abs(v) : smallest);
      return noNegativeZero((v * sc[0]).toFixed(digits)) + sc[1];
    }
    var u = (unit || "").trim().toLowerCase();
    var s = Number.isInteger(v) ? String(v) : String(Number(v.toPrecision(6)));
    return noNegativeZero(u && u !== "occ" ? s + " " + unit : s);
  }
  function pctText(frac) { return noNegativeZero((100 * frac).toFixed(1)) + "%"; }
  // severity colour: grey for nothing, then blue -> green -> yellow -> red as the share grows
  function colour(frac) {
    if (!isFinite(frac) || frac === 0) return "#eef0f2";
    var f = Math.min(1, Math.abs(frac));
    return "hsl(" + Math.round(240 * (1 - Math.sqrt(f))) + ", 85%, 52%)";
  }

  // ---- rendering --------------------------------------------------------
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function renderTree(tree, host, info) {
    // info: {label(i) -> [kind, text], key(i), value(i) -> shown value, total, unit, title(i)}
    // first the rows shown and their values, for one unit per kind of value in the column
    var vals = {}, ref = {}, small = {};
    (function visit(list) {
      list.forEach(function (i) {
        var v = info.value(i), k = unitKind(info.unit(i));
        vals[i] = v;
        ref[k] = Math.max(ref[k] || 0, Math.abs(v));
        if (v !== 0) small[k] = Math.min(small[k] === undefined ? Infinity : small[k], Math.abs(v));
        if (T[tree].ch[i].length && S.open[tree][i]) visit(T[tree].ch[i]);
      });
    })(T[tree].roots);
    var root = el("ul");
    function add(i, parentUl) {
      var li = el("li"), row = el("div", "row" + (S.sel[tree] === i ? " selected" : ""));
      var v = vals[i], hasKids = T[tree].ch[i].length > 0;
      row.setAttribute("data-tree", tree);
      row.setAttribute("data-id", String(i));
      row.setAttribute("data-key", info.key(i));
      row.setAttribute("data-value", String(v));
      row.setAttribute("data-mode", collapsed(tree, i) ? "inclusive" : "exclusive");
      var tog = el("button", "toggle", hasKids ? (S.open[tree][i] ? "\u25BC" : "\u25B6") : "");
      tog.disabled = !hasKids;
      tog.setAttribute("aria-label", S.open[tree][i] ? "collapse" : "expand");
      tog.addEventListener("click", function (ev) {
        ev.stopPropagation();
        if (S.open[tree][i]) delete S.open[tree][i]; else S.open[tree][i] = true;
        render();
      });
      var frac = info.total ? v / info.total : 0;
      var sw = el("span", "swatch");
      sw.style.background = colour(frac);
      var lab = el("span", "label"), parts = info.label(i);
      if (parts[0]) { lab.appendChild(el("span", "kind", parts[0])); lab.appendChild(document.createTextNode(" ")); }
      lab.appendChild(document.createTextNode(parts[1]));
      if (info.title) lab.title = info.title(i);
      row.appendChild(tog);
      row.appendChild(sw);
      var k = unitKind(info.unit(i));
      row.appendChild(el("span", "val", fmt(v, info.unit(i), ref[k], small[k] || 0)));
      row.appendChild(el("span", "pct", info.total ? pctText(frac) : ""));
      row.appendChild(lab);
      row.addEventListener("click", function () { S.sel[tree] = i; render(); });
      li.appendChild(row);
      if (hasKids && S.open[tree][i]) {
        var ul = el("ul");
        T[tree].ch[i].forEach(function (k) { add(k, ul); });
        li.appendChild(ul);
      }
      parentUl.appendChild(li);
    }
    T[tree].roots.forEach(function (r) { add(r, root); });
    host.textContent = "";
    host.appendChild(root);
  }

  function rootOf(tree, i) {
    while (T[tree].parent[i] >= 0) i = T[tree].parent[i];
    return i;
  }

  function render() {
    var m = S.sel.metric;
    var unit = m >= 0 ? M[m].unit : "";
    // property tree
    renderTree("metric", document.getElementById("metric-tree"), {
      label: function (i) { return ["", M[i].display]; },
      key: function (i) { return M[i].name; },
      value: function (i) { return collapsed("metric", i) ? metricIncl[i] : metricExcl(i); },
      unit: function (i) { return M[i].unit; },
      title: function (i) { return M[i].name; },
      total: 0
    });
    // percentages in the property tree are relative to the root of each node's tree
    document.querySelectorAll("#metric-tree .row").forEach(function (row) {
      var i = +row.getAttribute("data-id"), r = metricIncl[rootOf("metric", i)], v = +row.getAttribute("data-value");
      row.querySelector(".pct").textContent = r ? pctText(v / r) : "";
      row.querySelector(".swatch").style.background = colour(r ? v / r : 0);
    });

    // call tree, weighted by the selected property
    var vec = metricVector(), own = new Float64Array(NC), total = 0;
    vec.forEach(function (v, key) { own[Math.floor(key / NL)] += v; total += v; });
    var incl = subtreeSums("call", Array.prototype.slice.call(own));
    renderTree("call", document.getElementById("call-tree"), {
      label: function (i) { return ["", D.cnodes.label[i]]; },
      key: function (i) { return D.cnodes.path[i]; },
      value: function (i) { return collapsed("call", i) ? incl[i] : own[i]; },
      unit: function () { return unit; },
      title: function (i) { return D.cnodes.where[i]; },
      total: total
    });

    // system tree, weighted by the selected call path
    var c = S.sel.call, locVal = new Float64Array(NL);
    if (c >= 0) {
      var flag = collapsed("call", c) ? inSubtree("call", c) : null;
      vec.forEach(function (v, key) {
        var cn = Math.floor(key / NL);
        if (flag ? flag[cn] : cn === c) locVal[key % NL] += v;
      });
    }
    var sysOwn = D.sys.map(function (s) { return s.loc >= 0 ? locVal[s.loc] : 0; });
    var sysIncl = subtreeSums("sys", sysOwn), sysTotal = 0;
    locVal.forEach(function (v) { sysTotal += v; });
    renderTree("sys", document.getElementById("sys-tree"), {
      label: function (i) { return [D.sys[i].prefix, D.sys[i].label]; },
      key: function (i) { return D.sys[i].key; },
      value: function (i) { return collapsed("sys", i) ? sysIncl[i] : sysOwn[i]; },
      unit: function () { return unit; },
      total: sysTotal
    });

    // headings and the description of the selected property
    var mmode = m >= 0 && !collapsed("metric", m) && T.metric.ch[m].length ? "exclusive" : "inclusive";
    document.getElementById("call-mode").textContent =
      m >= 0 ? "\u2014 " + M[m].display + " (" + mmode + ")" : "";
    document.getElementById("sys-mode").textContent =
      c >= 0 ? "\u2014 " + D.cnodes.label[c] + " (" + (collapsed("call", c) ? "inclusive" : "exclusive") + ")" : "";
    var info = document.getElementById("info");
    info.textContent = "";
    if (m >= 0) {
      info.appendChild(el("h3", "", M[m].display));
      info.appendChild(el("div", "meta", "unique name: " + M[m].name + "   unit: " + (M[m].unit || "-") +
        "   total: " + fmt(metricIncl[m], M[m].unit)));
      info.appendChild(el("p", "descr", M[m].descr || "(no description)"));
      if (M[m].diag) info.appendChild(el("p", "diag", M[m].diag));
    }
  }
  render();
  window.expertReport = { state: S, render: render };
})();
