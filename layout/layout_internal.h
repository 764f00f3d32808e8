/* Internals shared by the files of layout/: shard intervals, mesh positions, and the free
 * functions of the task's parts, so that the parser, the splitter and the bounds agree on one
 * definition of a tile. */
#ifndef MC_LAYOUT_INTERNAL_H
#define MC_LAYOUT_INTERNAL_H

#include "layout/layout.h"

/* Number of shards of tensor dimension dim (product of its axis sizes, 1 when not split). */
int64_t mc_layout_nshards(const mc_task_t *task, const mc_layout_t *layout, int dim);
/* Half-open interval [*lo, *hi) of shard s of dimension dim (ceil rule or explicit sizes). */
void mc_layout_shard(const mc_task_t *task, const mc_layout_t *layout, int dim, int64_t s,
                     int64_t *lo, int64_t *hi);
/* Shard index along dim of the device at row-major position pos of the layout's mesh. */
int64_t mc_layout_shard_of(const mc_task_t *task, const mc_layout_t *layout, int dim, int pos);
/* Tile of the device at mesh position pos. */
void mc_layout_tile_at(const mc_task_t *task, const mc_layout_t *layout, int pos, mc_box_t *tile);
/* Position of a GPU in a mesh, -1 if absent. */
int mc_mesh_position(const mc_mesh_t *mesh, int gpu);
/* Index of the mesh called name (len bytes), -1 if none. */
int mc_task_find_mesh(const mc_task_t *task, const char *name, size_t len);
/* Index of the item named name (len bytes) among items whose name is their first member, base
 * + i*stride, or -1; mc_names_add indexes item i once it is stored. */
int mc_names_find(const mc_index_t *x, const void *base, size_t stride, const char *name,
                  size_t len);
void mc_names_add(mc_index_t *x, const void *base, size_t stride, int i);
/* Sets err to st with "PREFIXWHAT at column N", the text (up to ~72 characters around byte pos)
 * and a caret under pos; columns count UTF-8 characters. */
mc_status_t mc_layout_quote(mc_err_t *err, mc_status_t st, const char *prefix, const char *text,
                            size_t pos, const char *what);
/* Frees what a layout owns (explicit shard sizes). */
void mc_layout_clear(mc_layout_t *layout);
/* Drops the pieces and local copies (before a new split). */
void mc_task_clear_split(mc_task_t *task);

/* Bytes of a tile, a box of the tensor's dtype. */
uint64_t mc_layout_box_bytes(const mc_layout_t *layout, const mc_box_t *box);

#endif
