/* The learning rate over a run (engine/core/optim.h): the warmup ramp, then the schedule's decay
 * over the steps left, each value worked out by hand; the lookup of schedules by name, and
 * that the names listed for options and errors are the table's. */
#include "engine/core/optim.h"
#include "tests/check.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

static int near(double a, double b) { return fabs(a - b) <= 1e-6 * (fabs(b) > 1 ? fabs(b) : 1); }

int main(void)
{
    const mx_lr_schedule *cos_s = mx_lr_schedule_find("cosine"), *con = mx_lr_schedule_find("constant");
    CHECK(cos_s && con, "both schedules are found");
    CHECK(!mx_lr_schedule_find("step") && !mx_lr_schedule_find(NULL) && !mx_lr_schedule_find(""),
          "an unknown name is not");
    /* the names the options and errors list are the table's */
    char names[64];
    snprintf(names, sizeof names, "%s", mx_lr_schedule_names());
    int listed = 0;
    for (char *t = strtok(names, "|"); t; t = strtok(NULL, "|"), listed++)
        CHECK(mx_lr_schedule_find(t) != NULL, "'%s' is listed but not in the table", t);
    CHECK(listed == 2, "%d schedules listed, the table has 2", listed);
    if (!cos_s || !con) return check_summary("test_lr_schedule");

    /* constant: the peak lr at every point, as before schedules existed */
    mx_lr_plan p = {0.05f, 0.005f, 0, 3, con};
    for (double e = 0; e < 3; e += 0.25) CHECK(mx_lr_at(&p, e) == 0.05f, "constant at epoch %g", e);
    p.schedule = NULL;
    CHECK(mx_lr_at(&p, 2.9) == 0.05f, "no schedule is constant");

    /* cosine over 4 epochs: 1 at the start, 1/2 half-way, (1 + cos(pi/4))/2 at a quarter, near 0
     * at the end; monotone down */
    p = (mx_lr_plan){0.1f, 0.01f, 0, 4, cos_s};
    CHECK(near(mx_lr_at(&p, 0), 0.1), "cosine starts at the peak: %g", mx_lr_at(&p, 0));
    CHECK(near(mx_lr_at(&p, 2), 0.05), "half-way at half the peak: %g", mx_lr_at(&p, 2));
    CHECK(near(mx_lr_at(&p, 1), 0.1 * (1 + sqrt(0.5)) / 2), "a quarter in: %g", mx_lr_at(&p, 1));
    CHECK(near(mx_lr_at(&p, 3), 0.1 * (1 - sqrt(0.5)) / 2), "three quarters in: %g", mx_lr_at(&p, 3));
    CHECK(mx_lr_at(&p, 4) == 0 && mx_lr_at(&p, 9) == 0, "0 at the end and past it");
    float prev = 1;
    int down = 1;
    for (double e = 0; e <= 4; e += 1.0 / 64) {
        const float lr = mx_lr_at(&p, e);
        down &= lr <= prev;
        prev = lr;
    }
    CHECK(down, "cosine never rises");

    /* warmup of 1 epoch from 0.01 to 0.1, then cosine over the 3 epochs left: the ramp's
     * values, the peak where the ramp ends, half the peak 1.5 epochs later */
    p = (mx_lr_plan){0.1f, 0.01f, 1, 4, cos_s};
    CHECK(near(mx_lr_at(&p, 0), 0.01), "warmup starts at its start lr: %g", mx_lr_at(&p, 0));
    CHECK(near(mx_lr_at(&p, 0.5), 0.055), "and ramps linearly: %g", mx_lr_at(&p, 0.5));
    CHECK(near(mx_lr_at(&p, 1), 0.1), "the peak after the ramp: %g", mx_lr_at(&p, 1));
    CHECK(near(mx_lr_at(&p, 2.5), 0.05), "the decay spans the epochs after the ramp: %g", mx_lr_at(&p, 2.5));
    /* a ramp as long as the run leaves nothing to decay: the peak after it */
    p = (mx_lr_plan){0.1f, 0.01f, 2, 2, cos_s};
    CHECK(near(mx_lr_at(&p, 1), 0.055) && near(mx_lr_at(&p, 2), 0.1), "warmup over the whole run");

    /* a --steps run ends inside an epoch: 0.3 epochs in all */
    p = (mx_lr_plan){0.2f, 0.02f, 0, 0.3, cos_s};
    CHECK(near(mx_lr_at(&p, 0.15), 0.1), "a fractional run halves half-way: %g", mx_lr_at(&p, 0.15));
    return check_summary("test_lr_schedule");
}
