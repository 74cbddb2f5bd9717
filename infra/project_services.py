"""The Google APIs the program calls, enabled in the graph, and a wait for them to propagate.

One `projects.Service` per API in `catalog.REQUIRED_APIS`, never disabled on destroy (other things in the
project may use them, and disabling an API can delete resources of other stacks). Enabling is eventually
consistent: the provider returns when the operation is done and the service is listed, yet the first call
can still get "API has not been used in project ... wait a few minutes" (terraform-provider-google guide
google_project_service, "Newly activated service errors"; issue #8214). The guide's mitigation is a sleep
resource between enabling and using; `ready` is that sleep, so whatever depends on it waits on the first
`up` (and again only when the API list changes). The project-number lookup, which needs the Resource
Manager API, is an output-form invoke that depends on it too.

What cannot be declared: the Service Usage API itself (needed to enable the others; on by default in new
projects) and GPU / Lustre quota (requested by hand). docs/operations.md says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import pulumi
import pulumi_gcp as gcp
import pulumiverse_time as time

from core import catalog
from core.settings import Settings


@dataclass(frozen=True)
class ProjectServicesArgs:
    project: str
    apis: tuple[str, ...]
    propagation_wait: str  # Go duration, e.g. "90s"

    @classmethod
    def of(cls, s: Settings) -> "ProjectServicesArgs":
        # Image streaming adds the Container File System API (core.catalog, image streaming), and the copy of the
        # images into Artifact Registry by Cloud Run jobs their two APIs (infra/image_copy.py).
        streaming = {catalog.IMAGE_STREAMING_API, *catalog.IMAGE_COPY_APIS} if s.image_streaming else set()
        apis = set(catalog.REQUIRED_APIS) | streaming
        return cls(project=s.gcp_project, apis=tuple(sorted(apis)), propagation_wait=catalog.API_PROPAGATION_WAIT)


class ProjectServices(pulumi.ComponentResource):
    services: dict[str, gcp.projects.Service]
    ready: time.Sleep
    project_number: pulumi.Output[str]

    def __init__(self, name: str, args: ProjectServicesArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("nemo-rl-gke:infra:ProjectServices", name, None, opts)
        self.services = {
            api: gcp.projects.Service(
                api.split(".")[0],
                gcp.projects.ServiceArgs(
                    project=args.project,
                    service=api,
                    # Never disable on destroy: the API may serve other stacks or resources in the project.
                    disable_on_destroy=False,
                    # Leave dependent services alone when this resource is removed (it disables nothing anyway).
                    disable_dependent_services=False,
                ),
                opts=pulumi.ResourceOptions(parent=self),
            )
            for api in sorted(args.apis)
        }
        self.ready = time.Sleep(
            "api-propagation",
            time.SleepArgs(
                create_duration=args.propagation_wait,
                # Sleep again when the set of APIs changes (a newly added API needs the same grace).
                triggers={"apis": ",".join(sorted(args.apis))},
            ),
            opts=pulumi.ResourceOptions(parent=self, depends_on=list(self.services.values())),
        )
        project = gcp.organizations.get_project_output(
            project_id=args.project, opts=pulumi.InvokeOutputOptions(parent=self, depends_on=[self.ready])
        )
        self.project_number = project.number
        self.register_outputs({"apis": sorted(args.apis), "projectNumber": self.project_number})
