// report.html and the leaderboard page: sortable tables, every fold open when printing.
// Inlined into the page; the Content-Security-Policy pins this exact text by its hash.
document.documentElement.setAttribute('data-js', 'on');
document.querySelectorAll('table.sortable').forEach(function (t) {
  t.querySelectorAll('thead th').forEach(function (th, i) {
    th.addEventListener('click', function () {
      var b = t.tBodies[0], rs = Array.prototype.slice.call(b.rows),
        d = th.dataset.dir === 'asc' ? -1 : 1;
      th.dataset.dir = d > 0 ? 'asc' : 'desc';
      function v(r) {
        var c = r.cells[i];
        if (!c) return '';
        var x = c.getAttribute('data-v');
        return x !== null && x !== '' && !isNaN(+x) ? +x : c.textContent.trim().toLowerCase();
      }
      rs.sort(function (a, b2) { var x = v(a), y = v(b2); return (x > y ? 1 : x < y ? -1 : 0) * d; });
      rs.forEach(function (r) { b.appendChild(r); });
    });
  });
});
window.addEventListener('beforeprint', function () {
  document.querySelectorAll('details').forEach(function (d) { d.open = true; });
});
