import { INestApplicationContext } from '@nestjs/common';
import { ProjectsService } from '../projects/projects.service';

/**
 * First run on the embedded database (product.md 1): with no project yet, make a demo project
 * with one key of each kind and print them once, with a ready `curl` line.
 */
export async function seedDemoProject(app: INestApplicationContext, baseUrl: string): Promise<void> {
  const projects = app.get(ProjectsService);
  const existing = await projects.list({ page: 1, pageSize: 1 });
  if (existing.total > 0) return;

  const project = await projects.create({ name: 'Demo project', autoCreateCustomerAtRedemption: true });
  const secret = await projects.createKey(project.id, { kind: 'private', name: 'demo private key' });
  const pub = await projects.createKey(project.id, { kind: 'public', name: 'demo public key' });

  const lines = [
    '',
    '================ first run: demo project created ================',
    `project:            ${project.id} (${project.name})`,
    `private key:        ${secret.key}`,
    `public key:         ${pub.key}`,
    `signing secret:     ${pub.signingSecret}`,
    'These are shown once; they are stored only as hashes (the signing secret encrypted).',
    '',
    `curl -H "Authorization: Bearer ${secret.key}" ${baseUrl}/api/private/v1/info`,
    '=================================================================',
    '',
  ];
  process.stdout.write(lines.join('\n'));
}
