import { INestApplicationContext } from '@nestjs/common';
import { CodesService } from '../codes/codes.service';
import { FeaturesService } from '../plans/features.service';
import { PlansService } from '../plans/plans.service';
import { ProjectsService } from '../projects/projects.service';

/**
 * First run on the embedded database (docs/api-guide.md#first-run): with no project yet, make a demo project
 * with a free plan, a paid plan, a few codes and one key of each kind, and print them once,
 * with a ready `curl` line.
 */
export async function seedDemoProject(app: INestApplicationContext, baseUrl: string): Promise<void> {
  const projects = app.get(ProjectsService);
  const existing = await projects.list({ page: 1, pageSize: 1 });
  if (existing.total > 0) return;

  const project = await projects.create({ name: 'Demo project', autoCreateCustomerAtRedemption: true });
  const secret = await projects.createKey(project.id, { kind: 'private', name: 'demo private key' });
  const pub = await projects.createKey(project.id, { kind: 'public', name: 'demo public key' });

  const feature = await app.get(FeaturesService).create(project.id, {
    slug: 'notes',
    name: 'Notes',
    description: 'Notes a customer may keep',
    metered: true,
    unit: 'note',
  });
  const plans = app.get(PlansService);
  await plans.create(project.id, {
    slug: 'free',
    name: 'Free',
    value: 0,
    group: 'tier',
    quotas: [{ featureId: feature.id, limit: 50, priority: 0, resetInterval: null }],
  });
  const pro = await plans.create(project.id, {
    slug: 'pro',
    name: 'Pro',
    value: 20,
    group: 'tier',
    quotas: [{ featureId: feature.id, limit: 5000, priority: 10, resetInterval: 'P1M' }],
  });
  const batch = await app
    .get(CodesService)
    .createBatch(project.id, { planId: pro.id, duration: 'P30D', count: 3, note: 'demo codes' });

  const lines = [
    '',
    '================ first run: demo project created ================',
    `project:            ${project.id} (${project.name})`,
    `private key:        ${secret.key}`,
    `public key:         ${pub.key}`,
    `signing secret:     ${pub.signingSecret}`,
    `plans:              Free (value 0) and Pro (value 20) in group "tier"`,
    `Pro 30-day codes:   ${batch.codes.join('  ')}`,
    'The keys are shown once: the service keeps only their hashes (the signing secret encrypted).',
    '',
    `curl -H "Authorization: Bearer ${secret.key}" ${baseUrl}/api/private/v1/info`,
    `curl -H "Authorization: Bearer ${secret.key}" -H "Content-Type: application/json" \\`,
    `     -d '{"code":"${batch.codes[0]}","customer":{"type":"email","value":"ada@example.com"},"autoCreate":true}' \\`,
    `     ${baseUrl}/api/private/v1/redemptions`,
    '=================================================================',
    '',
  ];
  process.stdout.write(lines.join('\n'));
}
