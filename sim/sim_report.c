/* Reading a simulation: the busiest links, and the per-link timeline drawn as SVG. */
#include <stdlib.h>

#include "sim/sim.h"

static const mc_sim_result_t *sort_res; /* qsort has no context argument in C11 */
static const mc_topo_t *sort_topo;

static int cmp_busy(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    const mc_sim_result_t *r = sort_res;
    double lx = r->link_bytes[x] / sort_topo->links[x].bw, ly = r->link_bytes[y] / sort_topo->links[y].bw;
    if (lx != ly)
        return lx > ly ? -1 : 1;
    if (r->link_busy_s[x] != r->link_busy_s[y])
        return r->link_busy_s[x] > r->link_busy_s[y] ? -1 : 1;
    return (x > y) - (x < y);
}

/* Every busy link, busiest first; returns the count. Caller frees *out. */
static int busy_links(const mc_sim_result_t *res, const mc_topo_t *topo, int **out)
{
    int n = 0;
    int *ids = mc_xmalloc(sizeof(int) * (size_t)(res->nlinks + 1));
    for (int l = 0; l < res->nlinks; l++)
        if (res->link_busy_s[l] > 0)
            ids[n++] = l;
    sort_res = res;
    sort_topo = topo;
    mc_sort(ids, (size_t)n, sizeof(int), cmp_busy);
    *out = ids;
    return n;
}

int mc_sim_busiest(const mc_sim_result_t *res, const mc_topo_t *topo, int *ids, int n)
{
    int *all, nb = busy_links(res, topo, &all);
    int k = nb < n ? nb : n;
    for (int i = 0; i < k; i++)
        ids[i] = all[i];
    free(all);
    return k;
}

enum { LABEL_W = 260, PLOT_W = 900, ROW_H = 16, TOP = 40, TICKS = 5 };

void mc_sim_svg_begin(mc_buf_t *b, int width, int height, const char *title)
{
    mc_buf_printf(b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                     "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
                     "font-family=\"monospace\" font-size=\"11\">\n<text x=\"4\" y=\"16\">",
                  width, height);
    mc_sched_xml_escape(b, title ? title : "");
}

void mc_sim_svg_time_axis(mc_buf_t *b, double x0, double width, int y0, int y1, double span_s)
{
    for (int k = 0; k <= TICKS; k++) {
        double x = x0 + width * (double)k / TICKS;
        mc_buf_printf(b, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#ccc\"/>"
                         "<text x=\"%.1f\" y=\"%d\">%.3g ms</text>\n",
                      x, y0, x, y1, x, y1 + 14, span_s * k / TICKS * 1e3);
    }
}

char *mc_sim_timeline_svg(const mc_sim_result_t *res, const mc_topo_t *topo, const char *title)
{
    int *ids, n = busy_links(res, topo, &ids);
    int *row = mc_xmalloc(sizeof(int) * (size_t)(res->nlinks + 1));
    for (int l = 0; l < res->nlinks; l++)
        row[l] = -1;
    for (int i = 0; i < n; i++)
        row[ids[i]] = i;
    double span = res->makespan_s > 0 ? res->makespan_s : 1;
    int height = TOP + ROW_H * n + 30;
    mc_buf_t b = {0};
    mc_sim_svg_begin(&b, LABEL_W + PLOT_W + 20, height, title);
    mc_buf_printf(&b, " (makespan %.6g s; darker = more of the link's bandwidth)</text>\n",
                  res->makespan_s);
    mc_sim_svg_time_axis(&b, LABEL_W, PLOT_W, TOP - 4, TOP + ROW_H * n, span);
    for (int i = 0; i < n; i++) {
        const mc_link_t *l = &topo->links[ids[i]];
        mc_buf_printf(&b, "<text x=\"4\" y=\"%d\">", TOP + ROW_H * i + 12);
        mc_sched_xml_escape(&b, topo->nodes[l->src].name);
        mc_buf_printf(&b, " -&gt; ");
        mc_sched_xml_escape(&b, topo->nodes[l->dst].name);
        mc_buf_printf(&b, " %s</text>\n", mc_link_kind_str(l->kind));
    }
    for (int i = 0; i < res->nintervals; i++) {
        const mc_sim_interval_t *iv = &res->intervals[i];
        double share = iv->rate / topo->links[iv->link].bw;
        mc_buf_printf(&b, "<rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" fill=\"#1f5fa8\" "
                          "fill-opacity=\"%.2f\"/>\n",
                      LABEL_W + PLOT_W * iv->t0 / span, TOP + ROW_H * row[iv->link] + 2,
                      PLOT_W * (iv->t1 - iv->t0) / span, ROW_H - 4,
                      0.15 + 0.85 * (share < 1 ? share : 1));
    }
    mc_buf_printf(&b, "</svg>\n");
    free(row);
    free(ids);
    return b.data;
}
