import { Injectable } from '@nestjs/common';

/** Whether a module's rows keep the feature from being deleted; runs in the delete's transaction. */
export type FeatureReferenceCheck = (projectId: string, featureId: number) => Promise<boolean>;

/**
 * What other modules hold that keeps a feature from being deleted (`FEATURE_IN_USE`), beyond the
 * plans' own quotas. Those modules depend on plans, so plans cannot ask them directly (no module
 * cycles): each registers its check when the application starts, and the feature's delete asks
 * them all, with the feature's row locked.
 */
@Injectable()
export class FeatureReferences {
  private readonly checks: FeatureReferenceCheck[] = [];

  register(check: FeatureReferenceCheck): void {
    this.checks.push(check);
  }

  async inUse(projectId: string, featureId: number): Promise<boolean> {
    for (const check of this.checks) if (await check(projectId, featureId)) return true;
    return false;
  }
}
