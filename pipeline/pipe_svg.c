/* The pipeline timeline as SVG, drawn like sim/'s link timeline (labels on the left, time axis
 * along the bottom, one bar per busy interval): per order simulated, a compute lane and a
 * communication lane per stage, forward in blue and backward in orange, on one time scale so that
 * orders compare at a glance. A transfer is drawn in its sending stage's lane; hovering a bar
 * names it. */
#include "pipeline/pipeline.h"
#include "sched/sched.h"
#include "sim/sim.h"

enum { LABEL_W = 140, PLOT_W = 900, ROW_H = 16, HEAD_H = 24 };

static void bar(mc_buf_t *b, const mc_pipe_t *p, const mc_pipe_span_t *sp, double span, int y)
{
    const char *fill = sp->backward ? "#d9822b" : "#1f5fa8";
    mc_buf_printf(b, "<rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" fill=\"%s\" "
                     "fill-opacity=\"%s\"><title>",
                  LABEL_W + PLOT_W * sp->t0 / span, y + 2, PLOT_W * (sp->t1 - sp->t0) / span,
                  ROW_H - 4, fill, sp->group < 0 ? "0.9" : "0.5");
    if (sp->group < 0)
        mc_buf_printf(b, "%s %d on ", sp->backward ? "backward" : "forward", sp->mb);
    else
        mc_buf_printf(b, "%s %d to ", sp->backward ? "gradients" : "activations", sp->mb);
    char to[MC_MAX_CONSUMERS * (MC_NAME_MAX + 1)];
    if (sp->group >= 0)
        mc_pipe_group_to(p, &p->groups[sp->group], to, sizeof to);
    mc_sched_xml_escape(b, sp->group < 0 ? p->stages[sp->stage].name : to);
    mc_buf_printf(b, ": %.6g to %.6g s</title></rect>\n", sp->t0, sp->t1);
}

char *mc_pipe_timeline_svg(const mc_pipe_t *p, const mc_pipe_result_t *res, int nres,
                           const char *title)
{
    double span = 0;
    for (int r = 0; r < nres; r++)
        span = res[r].iteration_s > span ? res[r].iteration_s : span;
    span = span > 0 ? span : 1;
    int section = HEAD_H + 2 * ROW_H * p->nstages, height = 24 + nres * section + 20;
    mc_buf_t b = {0};
    mc_sim_svg_begin(&b, LABEL_W + PLOT_W + 20, height, title);
    mc_buf_printf(&b, " (blue forward, orange backward; pale bars are transfers)</text>\n");
    for (int r = 0; r < nres; r++) {
        int top = 24 + r * section;
        mc_buf_printf(&b, "<text x=\"4\" y=\"%d\">%s: iteration %.6g s, bubble %.1f%%, exposed "
                          "communication %.6g s</text>\n", top + 16,
                      mc_pipe_order_name(res[r].order), res[r].iteration_s, 100 * res[r].bubble,
                      res[r].exposed_comm_s);
        for (int s = 0; s < p->nstages; s++)
            for (int lane = 0; lane < 2; lane++) {
                mc_buf_printf(&b, "<text x=\"4\" y=\"%d\">",
                              top + HEAD_H + ROW_H * (2 * s + lane) + 12);
                mc_sched_xml_escape(&b, p->stages[s].name);
                mc_buf_printf(&b, " %s</text>\n", lane ? "comm" : "compute");
            }
        for (int i = 0; i < res[r].nspans; i++) {
            const mc_pipe_span_t *sp = &res[r].spans[i];
            if (sp->t1 > sp->t0)
                bar(&b, p, sp, span, top + HEAD_H + ROW_H * (2 * sp->stage + (sp->group >= 0)));
        }
    }
    mc_sim_svg_time_axis(&b, LABEL_W, PLOT_W, 24, 24 + nres * section, span);
    mc_buf_printf(&b, "</svg>\n");
    return b.data;
}
